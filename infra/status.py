"""`bgcluster status`: the health of every service of the running cluster."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from infra.runner import STATE_FILE


class NoCluster(RuntimeError):
    """No running cluster was found in the data directory."""


def read_state(data_dir: Path) -> dict[str, Any]:
    path = data_dir / STATE_FILE
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise NoCluster(f"no running cluster (no {path}); start one with `make up`") from None
    return state


async def probe(address: str, timeout: float = 2.0) -> str:
    """The gRPC health status name of `address`, or UNREACHABLE."""
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout)
            return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))
    except grpc.aio.AioRpcError:
        return "UNREACHABLE"


async def collect(data_dir: Path) -> list[dict[str, Any]]:
    state = read_state(data_dir)
    services = state["services"]
    statuses = await asyncio.gather(*(probe(s["address"]) for s in services))
    return [
        {
            "name": s["name"],
            "instance": s["instance"],
            "address": s["address"],
            "status": status,
            "metrics": s["metrics"],
            "pid": s["pid"],
        }
        for s, status in zip(services, statuses, strict=True)
    ]


def render(rows: list[dict[str, Any]]) -> str:
    table = [("INSTANCE", "ADDRESS", "STATUS")] + [
        (r["instance"], r["address"], r["status"]) for r in rows
    ]
    widths = [max(len(r[c]) for r in table) for c in range(3)]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in table
    )
