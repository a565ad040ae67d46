"""A bare grpc.aio bidirectional echo server: the transport's own cost, for bench_gateway.

`python -m benchmarks.echo_server PORT` serves `/bench.Echo/Chat` (raw bytes in, the same bytes
out, no protobuf) until SIGTERM.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

from benchmarks.floor_servers import serve_methods

METHOD = "/bench.Echo/Chat"


async def _chat(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
    async for message in requests:
        yield message


async def serve(port: int) -> None:
    await serve_methods(port, "bench.Echo", {"Chat": _chat})


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
