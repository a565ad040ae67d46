"""Pipelines whose nodes fail apart: one node frozen or gone costs only its own commands.

redis-py's cluster pipeline sends each node its part in parallel, but when any part fails on a
connection or a timeout it closes every connection of the client (the calls in flight to the
healthy nodes included), sleeps 0.25 s and sends the whole pipeline again, up to three times:
a frozen primary held every caller of the pipeline (a table replica's whole clock loop) for
about a second after its replica had taken over. Here each node's part is its own pipeline and
its own result: a node that fails gives its commands the error, the others' replies stand, the
slots are read again from a node that answers (the failed one last), and a command redirected
(MOVED, ASK: the slots moved) is sent again on its own, where the client follows the redirect.
A slot no node serves just now (mid-failover) fails its commands at once, where the client's own
call would close every connection and sleep 0.25 s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

from redis.asyncio.cluster import ClusterNode, PipelineCommand, RedisCluster
from redis.exceptions import AskError, MovedError, SlotNotCoveredError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger("bg.redis")
Command = Sequence[Any]  # ("ZRANGE", key, 0, 0, ...): the key is always the second item
NODE_FAILURES = (
    RedisConnectionError,
    RedisTimeoutError,
    SlotNotCoveredError,
    OSError,
    asyncio.TimeoutError,
)
_REDIRECTS = (MovedError, AskError, TryAgainError)


def node_of(client: Any, key: str) -> str:
    """The name of the node that serves `key` ("" on a standalone Redis, or when the client
    does not know yet: it has not read the slots, or no node serves them just now)."""
    node = _serving(client, key) if isinstance(client, RedisCluster) else None
    return "" if node is None else str(node.name)


def _serving(client: RedisCluster, key: Any) -> ClusterNode | None:
    try:
        return client.nodes_manager.get_node_from_slot(client.keyslot(key))
    except (KeyError, SlotNotCoveredError):
        return None


async def run_by_node(client: Any, commands: Sequence[Command]) -> list[Any]:
    """Each command's reply, or the exception it met, in order. One round trip per node,
    the nodes in parallel (a standalone Redis: one pipeline)."""
    if not commands:
        return []
    if not isinstance(client, RedisCluster):
        pipe = client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        try:
            return list(await pipe.execute(raise_on_error=False))
        except NODE_FAILURES as exc:
            return [exc] * len(commands)
    await client.initialize()  # learns the slots if it has not yet (no I/O once it has)
    counter = getattr(client, "counter", None)
    if counter is not None:
        counter.inc()
    parts: dict[str, tuple[ClusterNode, list[PipelineCommand]]] = {}
    results: list[Any] = [None] * len(commands)
    failed: list[str] = []
    for i, command in enumerate(commands):
        node = _serving(client, command[1])
        if node is None:  # no node serves the slot just now (a failover): read the slots again
            results[i] = SlotNotCoveredError(f"no node serves {command[1]!r} just now")
            failed.append("")
        else:
            parts.setdefault(node.name, (node, []))[1].append(PipelineCommand(i, *command))
    async with getattr(client, "slots", nullcontext()):
        sent = await asyncio.gather(
            *(node.execute_pipeline(part) for node, part in parts.values()),
            return_exceptions=True,
        )
    for (node, part), outcome in zip(parts.values(), sent, strict=True):
        if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
            raise outcome  # cancelled
        for cmd in part:
            result = outcome if isinstance(outcome, Exception) else cmd.result
            if isinstance(result, _REDIRECTS):
                result = await _alone(client, cmd.args)
            results[cmd.position] = result
        if any(isinstance(results[cmd.position], NODE_FAILURES) for cmd in part):
            failed.append(node.name)
    if failed:
        await read_slots_again(client, failed)
    return results


async def _alone(client: RedisCluster, args: Sequence[Any]) -> Any:
    try:
        return await client.execute_command(*args)
    except Exception as exc:
        return exc


async def read_slots_again(client: Any, failed: list[str]) -> None:
    """The failed nodes' slots may have moved (a replica promoted): read the slots again,
    asking the failed nodes last; the client's connections to healthy nodes stay open."""
    if not isinstance(client, RedisCluster) or not failed:
        return
    named = [name for name in failed if name]
    for name in named:
        client.nodes_manager.move_node_to_end_of_cached_nodes(name)
    try:
        await client.nodes_manager.initialize(last_failed_node_name=named[0] if named else None)
    except Exception as exc:
        log.warning("reading the cluster's slots failed", extra={"error": repr(exc)[:200]})


def raise_first(results: list[Any]) -> list[Any]:
    """The replies, or the first error met (for callers that want all or nothing)."""
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results
