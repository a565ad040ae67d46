"""Whether each infrastructure part serves what the cluster needs of it, by asking it for that:
Valkey a PING, SeaweedFS an S3 object written and read back (its gateway answers listings
while its volumes are still missing, so only a write proves the store), Tansu a metadata
request, PostgreSQL a query, Prometheus its readiness endpoint. A live process is not enough:
after a kill -9 SeaweedFS runs for many seconds before it stores anything.

`bgcluster status` shows SERVING / NOT_SERVING / DEAD for each part from these checks, and the
runner's supervisor says when a restarted part serves again.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.error
import urllib.request

PROBE_BUCKET = "bgcluster-readiness"  # apart from Tansu's bucket: its listings never see it


async def grpc_health(address: str, timeout: float = 2.0) -> str:
    """A service's gRPC health status name (SERVING, NOT_SERVING, ...), or UNREACHABLE."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout)
            return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))
    except grpc.aio.AioRpcError:
        return "UNREACHABLE"


def kind_of(name: str) -> str:
    """The kind of an infrastructure process by its name in the cluster state."""
    if name == "valkey" or name.startswith("valkey-"):
        return "valkey"
    return name  # seaweedfs, kafka, postgres, prometheus


async def serving(name: str, address: str, timeout: float = 2.0) -> bool:
    """Whether the part named `name` at `address` serves now (within `timeout`)."""
    check = _CHECKS.get(kind_of(name))
    if check is None or not address:
        return True  # nothing known to ask: the process being alive is all there is
    try:
        return await asyncio.wait_for(check(address, timeout), timeout + 0.5)
    except Exception:
        return False


async def _valkey(url: str, timeout: float) -> bool:
    import redis.asyncio as redis_asyncio

    client = redis_asyncio.Redis.from_url(
        url, socket_connect_timeout=timeout, socket_timeout=timeout
    )
    try:
        return bool(await client.ping())
    finally:
        with contextlib.suppress(Exception):
            await client.aclose()


async def _s3(url: str, timeout: float) -> bool:
    """Make the probe bucket (idempotent), write an object, read it back."""
    body = b"ok"

    def probe() -> bool:
        def send(method: str, path: str, data: bytes | None = None) -> tuple[int, bytes]:
            req = urllib.request.Request(f"{url}/{path}", data=data, method=method)
            try:
                with urllib.request.urlopen(req, timeout=timeout) as reply:
                    return int(reply.status), reply.read()
            except urllib.error.HTTPError as exc:
                return exc.code, b""

        made, _ = send("PUT", PROBE_BUCKET)
        if made not in (200, 409):
            return False
        wrote, _ = send("PUT", f"{PROBE_BUCKET}/probe", body)
        if wrote != 200:
            return False
        status, read = send("GET", f"{PROBE_BUCKET}/probe")
        return status == 200 and read == body

    return await asyncio.to_thread(probe)


async def _kafka(bootstrap: str, timeout: float) -> bool:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(timeout * 1000))
    try:
        await admin.start()
        await admin.list_topics()
        return True
    finally:
        with contextlib.suppress(Exception):
            await admin.close()


async def _postgres(url: str, timeout: float) -> bool:
    import asyncpg

    conn = await asyncpg.connect(f"{url}/postgres", timeout=timeout)
    try:
        return bool(await conn.fetchval("SELECT 1", timeout=timeout) == 1)
    finally:
        await conn.close()


async def _prometheus(url: str, timeout: float) -> bool:
    def ready() -> bool:
        with urllib.request.urlopen(f"{url.rstrip('/')}/-/ready", timeout=timeout) as reply:
            return int(reply.status) == 200

    return await asyncio.to_thread(ready)


_CHECKS = {
    "valkey": _valkey,
    "seaweedfs": _s3,
    "kafka": _kafka,
    "postgres": _postgres,
    "prometheus": _prometheus,
}
