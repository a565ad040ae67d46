"""A bare grpc.aio bidirectional echo server: the transport's own cost, for bench_gateway.

`python -m benchmarks.echo_server PORT` serves `/bench.Echo/Chat` (raw bytes in, the same bytes
out, no protobuf) until SIGTERM.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import grpc

METHOD = "/bench.Echo/Chat"


async def _chat(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
    async for message in requests:
        yield message


async def serve(port: int) -> None:
    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler(
        "bench.Echo", {"Chat": grpc.stream_stream_rpc_method_handler(_chat)}
    )
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("serving", flush=True)
    await stop.wait()
    await server.stop(1)


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
