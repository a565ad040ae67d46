"""The event log as the services see it: append keyed records (with headers) to a topic and get
a receipt for each, ask later whether every reading group has read a receipt's record, read a
topic as a group from its committed offsets and commit.

A publisher keeps each record (an outbox row, a table's stream) until the log's receipt says it
may forget it: KEPT at once, or once `check` answers READ; a record the log LOST is published
again. Relays, outboxes and consumers speak logical topic names and these types only: no
aiokafka, and the same code in every mode.

Two adapters stand behind it (issue 44, item 2): `kafka_log.KafkaEventLog` for production Kafka
(one topic per name, group-managed consumers, retention by the broker: every receipt is KEPT)
and `embedded_log.EmbeddedEventLog` for the embedded broker that forgets, whose generations,
incarnations and confirmations stay inside it (services/common/embedded_generations.py).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NewType, Protocol

Receipt = NewType("Receipt", str)
"""Where a log put a record, in the log's own words: its publisher keeps it to ask the log later
whether every reader has read the record (`Publisher.check`), or to send the key's next record
after it (`Outgoing.follows`). Only the log that wrote it reads it; a receipt it cannot read is
LOST."""

KEPT = Receipt("")
"""The receipt of a log that keeps what it acknowledged (Kafka, acks=all): nothing to ask later,
nothing to order after (a key's records share a partition). Its publisher may forget the record
at once."""


class Unsent(enum.Enum):
    """Why a record was not sent (nothing of its key after it was sent either)."""

    WAIT = "wait"  # its key's earlier records are not read yet where the log holds them: later
    RESEND = "resend"  # the log lost its key's earlier records: send them again first


class Verdict(enum.Enum):
    READ = "read"  # every group has read it, or the log keeps it until they do: forget it
    WAITING = "waiting"  # some group has not yet
    LOST = "lost"  # the log no longer holds it and not every group read it: publish it again


@dataclass(frozen=True)
class Outgoing:
    """A record to publish, keyed (a key's records stay in order). `follows`: the receipt of
    this key's previous record, when its publisher keeps one (the table relay does: a log whose
    history moves on in segments keeps a key's records in order across them)."""

    logical: str
    key: bytes
    value: bytes
    headers: Sequence[tuple[str, bytes]] = ()
    follows: Receipt | None = None


@dataclass(frozen=True)
class Incoming:
    """A record read: its logical topic, key, value, headers and the broker's timestamp."""

    logical: str
    key: bytes | None
    value: bytes
    headers: Sequence[tuple[str, bytes]]
    timestamp_ms: int


class Publisher(Protocol):
    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        """Append `records` in order and wait for the log: each one's receipt (KEPT: the log
        keeps it for good), or why it was not sent. Raises when the log failed any (then none
        counts as sent: send again, consumers dedupe). `at_ms`: the cluster's clock."""
        ...

    async def check(self, logical: str, receipts: Sequence[Receipt]) -> list[Verdict]:
        """Whether every group reading `logical` has read each receipt's record (KEPT: READ)."""
        ...

    async def close(self) -> None: ...


class Reader(Protocol):
    """One service's reader of some topics, as its group (its share of the partitions)."""

    async def start(self) -> None: ...
    async def poll(self, timeout_ms: int, max_records: int) -> list[Incoming]: ...

    async def commit(self) -> None:
        """Commit what was polled (a refusal the group will sort out is not an error)."""
        ...

    async def behind(self) -> int:
        """Records on the assigned partitions not read yet."""
        ...

    async def stop(self) -> None: ...


class Housekeeper(Protocol):
    """What keeps a log's history bounded (an embedded log's generations); run every
    `every_s` by one service, on the cluster's clock."""

    @property
    def every_s(self) -> float: ...
    async def step(self, at_ms: int | None = None) -> None: ...
    async def close(self) -> None: ...


class EventLogPort(Protocol):
    def publisher(self, client_id: str) -> Publisher:
        """A publisher with a producer of its own (made on first use, in the running loop)."""
        ...

    def reader(
        self, service: str, logicals: Sequence[str], client_id: str, share: tuple[int, int]
    ) -> Reader:
        """`service`'s group's reader of `logicals`: replica `share[0]` of `share[1]`."""
        ...

    def housekeeper(self) -> Housekeeper | None:
        """What keeps the history bounded, if the log needs one of ours (Kafka: retention)."""
        ...

    async def close(self) -> None:
        """Close what the log's publishers and readers share (not readers still running)."""
        ...
