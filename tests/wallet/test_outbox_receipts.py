"""The outbox keeps each row until the event log's receipt says it may go, with one code for
every log (issue 62, item 1): a KEPT receipt (Kafka's) confirms the row as it is marked
published; any other is kept in the row until the log answers READ (confirmed) or LOST (sent
again). And migration 0007 carries an outbox of the layout before receipts across. SQLite and
PostgreSQL; the logs are fakes behind the port (the real ones: tests/platform/test_event_log.py,
the cluster's storage-loss drills)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.connections import sql_engine
from services.common.log_port import KEPT, Outgoing, Receipt, Unsent, Verdict
from services.common.migrate import migrate
from services.wallet.app import MIGRATIONS
from services.wallet.ledger import Ledger
from services.wallet.outbox import OutboxRelay
from services.wallet.schema import outbox
from tests.helpers import sql_url
from tests.wallet.conftest import fund


class Keeping:
    """A log that keeps what it acknowledged (production Kafka's): every receipt KEPT."""

    def __init__(self) -> None:
        self.asked: list[Receipt] = []

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        return [KEPT] * len(records)

    async def check(self, logical: str, receipts: Sequence[Receipt]) -> list[Verdict]:
        self.asked += receipts
        return [Verdict.READ] * len(receipts)

    async def close(self) -> None:
        return None


class Receipting(Keeping):
    """A log that may forget: receipt `r<n>` for its n-th record, each answered as `verdicts`
    says (WAITING unless told)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0
        self.verdicts: dict[Receipt, Verdict] = {}

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        self.sent += len(records)
        return [Receipt(f"r{self.sent - len(records) + i}") for i in range(len(records))]

    async def check(self, logical: str, receipts: Sequence[Receipt]) -> list[Verdict]:
        self.asked += receipts
        return [self.verdicts.get(r, Verdict.WAITING) for r in receipts]


async def _rows(engine: AsyncEngine) -> list[Any]:
    async with engine.connect() as conn:
        query = select(outbox.c.id, outbox.c.published_ms, outbox.c.confirmed_ms)
        return list(
            (await conn.execute(query.add_columns(outbox.c.sent_receipt).order_by("id"))).all()
        )


async def test_kept_receipts_confirm_rows_as_they_are_published(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    await fund(ledger, alice=1_000, bob=500)
    log = Keeping()
    relay = OutboxRelay(engine, log, None, 0.05, keep_published_s=0)
    assert await relay.publish_once() == 2
    rows = await _rows(engine)
    assert [r.confirmed_ms == r.published_ms is not None for r in rows] == [True, True]
    assert {r.sent_receipt for r in rows} == {None}
    assert await relay.confirm_once() == 0 and log.asked == []  # nothing waits to be asked
    assert await relay.prune(now_ms=rows[-1].published_ms + 1) == 2


async def test_other_receipts_are_kept_until_the_log_says_read_or_lost(
    ledger: Ledger, engine: AsyncEngine
) -> None:
    await fund(ledger, alice=1_000, bob=500, carol=200)
    log = Receipting()
    relay = OutboxRelay(engine, log, None, 0.05, keep_published_s=0)
    assert await relay.publish_once() == 3
    rows = await _rows(engine)
    assert [r.sent_receipt for r in rows] == ["r0", "r1", "r2"]
    assert [r.confirmed_ms for r in rows] == [None] * 3
    later = rows[-1].published_ms + 1
    assert await relay.prune(now_ms=later) == 0  # unconfirmed rows are never pruned

    log.verdicts = {Receipt("r0"): Verdict.READ, Receipt("r1"): Verdict.LOST}
    assert await relay.confirm_once() == 1
    assert log.asked == ["r0", "r1", "r2"]
    read, lost, waiting = await _rows(engine)
    assert read.confirmed_ms is not None and read.sent_receipt == "r0"
    assert (lost.published_ms, lost.confirmed_ms, lost.sent_receipt) == (None, None, None)
    assert waiting == rows[2]  # untouched
    assert await relay.publish_once() == 1  # the lost row, sent again: a new receipt
    assert (await _rows(engine))[1].sent_receipt == "r3"
    assert await relay.prune(now_ms=later) == 1  # the confirmed one alone


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    yield request, tmp_path


async def test_0007_confirms_what_kafka_published_and_sends_unconfirmed_placements_again(
    database: tuple[Any, Path],
) -> None:
    """An outbox of the layout before receipts (0006): a row Kafka published (no placement,
    never confirmed: that log confirmed nothing) is confirmed as of its publication; one the
    embedded broker placed and no group read yet goes again; a confirmed row and an unpublished
    one stay as they were."""
    engine = sql_engine(await sql_url(*database, "wallet"))
    try:
        await migrate(engine, MIGRATIONS, "0006")
        placed: dict[str, Any] = {
            "sent_gen": 4,
            "sent_partition": 0,
            "sent_offset": 9,
            "sent_incarnation": "i1",
        }
        nowhere: dict[str, Any] = dict.fromkeys([*placed, "published_ms", "confirmed_ms"])
        rows: list[dict[str, Any]] = [
            {"published_ms": 10},  # Kafka's
            {"published_ms": 20, **placed},  # embedded, unconfirmed
            {"published_ms": 30, **placed, "confirmed_ms": 35},
            {},  # not yet published
        ]
        row: dict[str, Any] = {
            "topic": "wallet-events",
            "key": "k",
            "payload": b"x",
            "created_ms": 1,
        }
        async with engine.begin() as conn:
            table = await conn.run_sync(_reflected)
            await conn.execute(insert(table), [row | nowhere | r for r in rows])
        await migrate(engine, MIGRATIONS)
        async with engine.connect() as conn:
            found = (
                await conn.execute(
                    text("SELECT published_ms, confirmed_ms, sent_receipt FROM outbox ORDER BY id")
                )
            ).all()
            columns = await conn.run_sync(_columns)
        kafka, embedded, confirmed, unpublished = (tuple(r) for r in found)
        assert kafka == (10, 10, None) and embedded == (None, None, None)
        assert confirmed == (30, 35, None) and unpublished == (None, None, None)
        assert "sent_receipt" in columns and not {"sent_gen", "sent_incarnation"} & columns
    finally:
        await engine.dispose()


def _reflected(conn: Any) -> Any:
    from sqlalchemy import MetaData, Table

    return Table("outbox", MetaData(), autoload_with=conn)


def _columns(conn: Any) -> set[str]:
    from sqlalchemy import inspect

    return {c["name"] for c in inspect(conn).get_columns("outbox")}
