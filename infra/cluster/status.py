"""`bgcluster status`: the health of every service and infrastructure process of the running
cluster, with live pids and restart counts; `bgcluster restart NAME` restarts one of them."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from infra.cluster import readiness
from infra.cluster.runner import STATE_FILE


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
    return await readiness.grpc_health(address, timeout)


def alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def infra_status(name: str, address: str, pid: int | None) -> str:
    """SERVING when the part answers what it serves (infra/cluster/readiness.py), NOT_SERVING
    while its process lives but it does not, DEAD with no process."""
    if not alive(pid):
        return "DEAD"
    return "SERVING" if await readiness.serving(name, address) else "NOT_SERVING"


async def collect(data_dir: Path) -> list[dict[str, Any]]:
    state = read_state(data_dir)
    services = state["services"]
    infra = state.get("infra", [])
    statuses = await asyncio.gather(*(probe(s["address"]) for s in services))
    parts = await asyncio.gather(
        *(infra_status(p["name"], p.get("address", ""), p["pid"]) for p in infra)
    )
    rows = [
        {
            "name": s["name"],
            "instance": s["instance"],
            "address": s["address"],
            "status": status,
            "metrics": s["metrics"],
            "pid": s["pid"],
            "restarts": s.get("restarts", 0),
        }
        for s, status in zip(services, statuses, strict=True)
    ]
    rows += [
        {
            "name": p["name"],
            "instance": p["name"],
            "address": p.get("address", ""),
            "status": status,
            "metrics": "",
            "pid": p["pid"],
            "restarts": p.get("restarts", 0),
        }
        for p, status in zip(infra, parts, strict=True)
    ]
    return rows


def healthy(rows: list[dict[str, Any]]) -> bool:
    return all(r["status"] == "SERVING" for r in rows)


class UnknownProcess(LookupError):
    """`bgcluster restart` was given a name the cluster does not run."""


async def restart(data_dir: Path, name: str, timeout: float = 60.0) -> dict[str, Any]:
    """SIGTERM the named process (a service instance or infrastructure); the runner's supervisor
    starts it again. Waits for the new pid and for SERVING (a service's health, an
    infrastructure part's own check)."""
    rows = await collect(data_dir)
    row = next((r for r in rows if r["instance"] == name), None)
    if row is None:
        known = ", ".join(r["instance"] for r in rows)
        raise UnknownProcess(f"no process named {name!r}; the cluster runs: {known}")
    old_pid = row["pid"]
    if alive(old_pid):
        os.kill(old_pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        with_state = {r["instance"]: r for r in await collect(data_dir)}
        now = with_state.get(name)
        if now and now["pid"] != old_pid and now["status"] == "SERVING":
            return now
    raise TimeoutError(f"{name} was not back within {timeout:.0f}s")


def render(rows: list[dict[str, Any]]) -> str:
    table = [("INSTANCE", "ADDRESS", "STATUS", "PID", "RESTARTS")] + [
        (r["instance"], r["address"], r["status"], str(r["pid"]), str(r["restarts"])) for r in rows
    ]
    widths = [max(len(r[c]) for r in table) for c in range(5)]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in table
    )
