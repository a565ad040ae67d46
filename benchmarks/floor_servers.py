"""The command path's transport with no rules: the floor under bench_gateway's figures.

The design of issue 25 carries a command on these hops, and so do these two servers, with raw
bytes of the real messages' sizes and none of the work between (no auth, no rules, no views, no
protobuf, no metrics, no tracing):

- `front` (the gateway's part): a Play stream per seat; the first message names the table and
  the seat, each later one is a command. Commands go to `back` on one stream in batches (every
  command waiting in one message, none waits for more); each answer is written to both seats'
  streams. It also reads the table channels' pub/sub copies, as a gateway must for the tables
  other gateways command (and drops them: it answered from the batch already).
- `front` with BACK_ADDRESS `local` commits itself: the same path with the table's part in the
  gateway's process, for the figure of that design.
- `back` (the table replica's part): per command one EVALSHA of a script that does what the
  commit script must at least do (the state's CAS hash write, the event stream's XADD, the
  PUBLISH of the update), then the update back in the next batch message.

`python -m benchmarks.floor_servers front PORT BACK_ADDRESS REDIS_PORT UPDATE_BYTES` or
`... back PORT REDIS_PORT STATE_BYTES EVENT_BYTES UPDATE_BYTES`; each prints "serving" and runs
until SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import struct
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import redis.asyncio as redis_asyncio

PLAY = "/floor.Front/Play"
BATCHES = "/floor.Back/Batches"
OPTIONS = [("grpc.use_local_subchannel_pool", 1)]
_LEN = struct.Struct(">I")

# What the commit script must do at least: compare-and-set the state, append the events, publish.
_COMMIT = """
local seq = tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
redis.call('HSET', KEYS[1], 'seq', seq + 1, 'state', ARGV[1])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', 200, '*', 'e', ARGV[2])
redis.call('PUBLISH', KEYS[3], ARGV[3])
return seq + 1
"""


_running: set[asyncio.Future[Any]] = set()  # commits under way (a task needs a reference)


def _spawn(work: Awaitable[Any]) -> None:
    task = asyncio.ensure_future(work)
    _running.add(task)
    task.add_done_callback(_running.discard)


def frames(items: list[bytes]) -> bytes:
    return b"".join(_LEN.pack(len(i)) + i for i in items)


def unframe(data: bytes) -> list[bytes]:
    out, at = [], 0
    while at < len(data):
        (size,) = _LEN.unpack_from(data, at)
        out.append(data[at + 4 : at + 4 + size])
        at += 4 + size
    return out


class Batcher:
    """One stream to a peer: what is queued while a message is on its way goes in the next."""

    def __init__(self) -> None:
        self.waiting: list[bytes] = []
        self.ready = asyncio.Event()
        self.closed = False

    def put(self, item: bytes) -> None:
        self.waiting.append(item)
        self.ready.set()

    def close(self) -> None:
        """End the stream once what is queued has gone (a stream cut short instead is a
        cancelled call at the peer: grpc prints its CancelledError)."""
        self.closed = True
        self.ready.set()

    async def messages(self) -> AsyncIterator[bytes]:
        while True:
            await self.ready.wait()
            self.ready.clear()
            batch, self.waiting = self.waiting, []
            if batch:
                yield frames(batch)
            if self.closed:
                return


# -- back: the table replica's part -----------------------------------------------------------


async def _committer(
    redis_port: int, state: int, event: int, update: int
) -> Callable[[str], Awaitable[Any]]:
    """The commit: one EVALSHA per command with blobs of the real sizes."""
    client = redis_asyncio.Redis(port=redis_port)
    sha = await client.script_load(_COMMIT)
    blobs = (os.urandom(state), os.urandom(event), os.urandom(update))

    def commit(table: str) -> Awaitable[Any]:
        return client.evalsha(sha, 3, f"t:{table}", f"s:{table}", f"u:{table}", *blobs)

    return commit


async def serve_back(port: int, redis_port: int, state: int, event: int, update: int) -> None:
    commit = await _committer(redis_port, state, event, update)
    answer = os.urandom(update)

    async def batches(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
        out = Batcher()

        async def one(command: bytes) -> None:
            await commit(command[:16].decode())
            out.put(command[:16] + answer)

        async def read() -> None:
            async for message in requests:
                for command in unframe(message):
                    _spawn(one(command))
            while _running:  # the front is done: answer what it sent, then end the stream
                await asyncio.wait(set(_running))
            out.close()

        reader = asyncio.ensure_future(read())
        try:
            async for message in out.messages():
                yield message
        finally:
            reader.cancel()

    await serve_methods(port, "floor.Back", {"Batches": batches})


# -- front: the gateway's part ----------------------------------------------------------------


async def serve_front(port: int, back: str, redis_port: int, seat_bytes: int) -> None:
    """With `back` "local", the front commits itself (the table's part in the gateway's
    process: no hop between them)."""
    seats: dict[str, list[asyncio.Queue[bytes | None]]] = {}
    to_back = Batcher()
    seat_update = os.urandom(seat_bytes)

    def answered(table: str) -> None:
        for queue in seats.get(table, ()):
            queue.put_nowait(seat_update)

    async def answers() -> None:
        if back == "local":
            return
        channel = grpc.aio.insecure_channel(back, options=OPTIONS)
        async for message in channel.stream_stream(BATCHES, None, None)(to_back.messages()):
            for answer in unframe(message):
                answered(answer[:16].decode())

    async def commit_here(command: bytes) -> None:
        table = command[:16].decode()
        await committer(table)
        answered(table)

    if back == "local":
        committer = await _committer(redis_port, 400, 150, 2 * seat_bytes)

    async def pubsub_copies() -> None:
        sub = redis_asyncio.Redis(port=redis_port).pubsub()
        await sub.psubscribe("u:*")
        while True:
            await sub.get_message(timeout=1.0)  # answered from the batch: dropped

    answering = asyncio.ensure_future(answers())
    copies = asyncio.ensure_future(pubsub_copies())

    async def play(requests: AsyncIterator[bytes], context: Any) -> None:
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        join = await requests.__anext__()
        table = join[:16].decode()
        seats.setdefault(table, []).append(queue)

        async def commands() -> None:
            async for command in requests:
                if back == "local":
                    _spawn(commit_here(command))
                else:
                    to_back.put(command)
            queue.put_nowait(None)  # the seat is done: the stream ends after what it was sent

        reading = asyncio.ensure_future(commands())
        try:
            while (update := await queue.get()) is not None:
                await context.write(update)
        finally:
            reading.cancel()
            seats[table].remove(queue)

    try:
        await serve_methods(port, "floor.Front", {"Play": play})
    finally:
        to_back.close()  # the back ends its stream once it has answered the last commands
        with contextlib.suppress(Exception):
            await asyncio.wait_for(answering, 5)
        copies.cancel()


async def serve_methods(port: int, service: str, methods: dict[str, Any]) -> None:
    """Serve `methods` (raw bytes, stream-stream) on loopback until SIGTERM."""
    server = grpc.aio.server()
    handlers = {n: grpc.stream_stream_rpc_method_handler(m) for n, m in methods.items()}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("serving", flush=True)
    await stop.wait()
    await server.stop(1)


def main(argv: list[str]) -> None:
    role, port, *rest = argv
    if role == "front":
        asyncio.run(serve_front(int(port), rest[0], int(rest[1]), int(rest[2])))
    else:
        state, event, update = (int(a) for a in rest[1:])
        asyncio.run(serve_back(int(port), int(rest[0]), state, event, update))


if __name__ == "__main__":
    main(sys.argv[1:])
