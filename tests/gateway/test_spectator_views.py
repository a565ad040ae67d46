"""The watchers of a table on one gateway share one view read per commit."""

from __future__ import annotations

import asyncio

import pytest

from bg.table.v1 import table_pb2
from services.gateway.spectator_views import SpectatorViews


async def test_watchers_share_one_read_per_seq_and_a_failure_is_read_again() -> None:
    reads: list[str] = []
    fail = [True]

    async def read(table_id: str) -> table_pb2.TableView:
        reads.append(table_id)
        await asyncio.sleep(0.01)
        if fail[0]:
            fail[0] = False
            raise ConnectionError("table service down")
        return table_pb2.TableView(table_id=table_id, seq=len(reads))  # seq: which read

    views = SpectatorViews(read)
    for _ in range(3):
        views.watch("t1")
    with pytest.raises(ConnectionError):
        await views.view("t1", 5)
    got = await asyncio.gather(*(views.view("t1", 5) for _ in range(3)))
    assert [v.seq for v in got] == [2] * 3 and reads == ["t1", "t1"]  # the failure not kept
    assert (await views.view("t1", 4)).seq == 2  # older seqs: what is there
    assert (await views.view("t1", 6)).seq == 3 and len(reads) == 3
    for _ in range(3):
        views.unwatch("t1")
    assert (await views.view("t1", 6)).seq == 4  # nobody watches: nothing kept
    assert (await views.view("t1", 6)).seq == 5
