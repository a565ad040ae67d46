"""Service host overhead: health Check round trips with and without the metrics interceptor.

Both servers run in this process on loopback and are measured alternately in rounds, so machine
noise hits both; the ratio (instrumented / bare) is the figure that holds across machines.
"""

from __future__ import annotations

import asyncio
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer

from services.common.metrics import MetricsInterceptor, ServiceMetrics

CALLS = 2000
ROUNDS = 3
CONCURRENCY = 16


async def _server(instrumented: bool) -> tuple[grpc.aio.Server, int]:
    interceptors = [MetricsInterceptor(ServiceMetrics("bench"))] if instrumented else []
    server = grpc.aio.server(interceptors=interceptors)
    servicer = HealthServicer()
    await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


async def _rate(port: int) -> float:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest()
        await stub.Check(request)

        async def worker(n: int) -> None:
            for _ in range(n):
                await stub.Check(request)

        started = time.perf_counter()
        await asyncio.gather(*(worker(CALLS // CONCURRENCY) for _ in range(CONCURRENCY)))
        return CALLS / (time.perf_counter() - started)


async def _main() -> None:
    bare, bare_port = await _server(False)
    inst, inst_port = await _server(True)
    rates: dict[str, list[float]] = {"bare": [], "instrumented": []}
    try:
        for _ in range(ROUNDS):
            rates["bare"].append(await _rate(bare_port))
            rates["instrumented"].append(await _rate(inst_port))
    finally:
        await bare.stop(None)
        await inst.stop(None)
    best = {k: max(v) for k, v in rates.items()}
    print(f"   health Check, bare server:          {best['bare']:8.0f} calls/s")
    print(f"   health Check, metrics interceptor:  {best['instrumented']:8.0f} calls/s")
    print(f"   ratio instrumented/bare:            {best['instrumented'] / best['bare']:8.2f}")


def run() -> None:
    asyncio.run(_main())
