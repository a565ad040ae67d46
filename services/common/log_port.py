"""The event log as the services see it: publish a batch and learn where each record went, ask
later whether every reading group has read it, read a topic as a group and commit.

Two adapters stand behind it (issue 44, item 2): `kafka_log.KafkaEventLog` for production Kafka
(one topic per name, group-managed consumers, retention by the broker: a record acknowledged is
kept, so it counts as read at once) and `embedded_log.EmbeddedEventLog` for the embedded broker
that forgets (generations, incarnations, the outboxes replayed:
services/common/embedded_generations.py).
Relays, outboxes and consumers speak logical topic names and these types only; no aiokafka.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Placement:
    """Where a record went: enough to ask later whether every group has read it. `gen` and
    `incarnation` are an embedded log's generation and broker incarnation (0 and "" on Kafka)."""

    gen: int
    partition: int
    offset: int
    incarnation: str = ""


class Unsent(enum.Enum):
    """Why a record was not sent (nothing of its key after it was sent either)."""

    HELD = "held"  # its key's last records, generations back, are not read yet: try later
    FORGOTTEN = "forgotten"  # the broker forgot its key's last records: send those again first


class Verdict(enum.Enum):
    READ = "read"  # every group reading the topic has committed past it
    WAITING = "waiting"  # some group has not yet
    FORGOTTEN = "forgotten"  # the broker restarted and forgot it: publish it again


@dataclass(frozen=True)
class Outgoing:
    """A record to publish, keyed (a key's records stay in order). `after`: where this key's
    last record went, when its publisher keeps it (the table relay does: a table's records are
    read in order across an embedded log's generations)."""

    logical: str
    key: bytes
    value: bytes
    headers: Sequence[tuple[str, bytes]] = ()
    after: Placement | None = None


@dataclass(frozen=True)
class Incoming:
    """A record read: its logical topic, key, value, headers and the broker's timestamp."""

    logical: str
    key: bytes | None
    value: bytes
    headers: Sequence[tuple[str, bytes]]
    timestamp_ms: int


class Publisher(Protocol):
    @property
    def confirms(self) -> bool:
        """Whether a placement must be checked until READ before its source may forget it (an
        embedded log: yes; Kafka keeps what it acknowledged: no)."""
        ...

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Placement | Unsent]:
        """Send `records` in order and wait for the broker: each one's placement, or why it was
        not sent. Raises when the broker failed any (then none counts as sent: send again,
        consumers dedupe). `at_ms`: the cluster's clock (an embedded log's generations)."""
        ...

    async def check(self, logical: str, placements: Sequence[Placement]) -> list[Verdict]:
        """Whether every group reading `logical` has read each placement."""
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
