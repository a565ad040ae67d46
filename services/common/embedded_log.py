"""The event log port on the embedded broker that forgets (BG_KAFKA_LOG=embedded): generations,
the broker's incarnation, the groups' commits as confirmation, the outboxes replayed
(services/common/embedded_generations.py says why and how).

A publisher sends each record to its topic's current generation, except a keyed record whose
key's last record (`Outgoing.after`) is in the previous generation and not read by every group
yet: it stays there, so each group reads a key's records in order across the switch; one whose
last record is two or more generations back and unread is HELD; one whose last record the broker
forgot (another incarnation) is FORGOTTEN (its publisher sends those again first). A placement
is READ once every group has committed past it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aiokafka import TopicPartition

from services.common.embedded_generations import (
    EventLog,
    Forgetful,
    GenerationConsumer,
    TopicKeeper,
    confirmed,
    forgetful_of,
)
from services.common.kafka_log import ConsumerReader, Sender, consumer
from services.common.log_port import Outgoing, Placement, Reader, Unsent, Verdict

MAX_HOLD = 5  # generations a key waits at most for a lagging group


@dataclass(frozen=True)
class Target:
    """Where a record goes this pass: a generation, or why it is not sent."""

    gen: int
    unsent: Unsent | None = None


def target_of(after: Placement | None, read: bool, current: int, incarnation: str) -> Target:
    """The generation a key's next record goes to, given where its last one went (`after`),
    whether every group has read that one, and the current generation and incarnation."""
    if after is None or after.gen < 0:
        return Target(current)
    if after.incarnation != incarnation:
        return Target(current, Unsent.FORGOTTEN)
    if after.gen < current and not read:
        if after.gen == current - 1:
            return Target(after.gen)  # stay: its records there are not all read yet
        if after.gen > current - MAX_HOLD:
            return Target(after.gen, Unsent.HELD)
        # else a group is MAX_HOLD periods behind: its order is given up (its lag alert fired
        # long ago) rather than stopping every key for it.
    return Target(max(current, after.gen))  # never back: generations are read in order


class EmbeddedPublisher:
    confirms = True

    def __init__(self, sender: Sender, forgetful: Forgetful) -> None:
        self.sender = sender
        self.forgetful = forgetful

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Placement | Unsent]:
        f = self.forgetful
        now: dict[str, tuple[int, str]] = {}
        for logical in dict.fromkeys(r.logical for r in records):
            now[logical] = await f.now(logical, at_ms)
        read = await self._read_afters(records, now)
        targets = [
            target_of(
                r.after,
                r.after is not None and read.get((r.logical, r.after), False),
                *now[r.logical],
            )
            for r in records
        ]
        out: list[Placement | Unsent] = []
        sending: list[tuple[int, str, Outgoing]] = []
        for i, (r, t) in enumerate(zip(records, targets, strict=True)):
            out.append(t.unsent or Unsent.HELD)  # a placement below for each one sent
            if t.unsent is None:
                sending.append((i, f.log.topic(r.logical, t.gen, now[r.logical][1]), r))
        await f.topics.ensure({topic for _, topic, _ in sending})
        sent = await self.sender.send([(topic, r) for _, topic, r in sending])
        for (i, _, r), (partition, offset) in zip(sending, sent, strict=True):
            out[i] = Placement(targets[i].gen, partition, offset, now[r.logical][1])
        return out

    async def _read_afters(
        self, records: Sequence[Outgoing], now: Mapping[str, tuple[int, str]]
    ) -> dict[tuple[str, Placement], bool]:
        """Whether every group has read each record's `after` that is in an older generation of
        the current incarnation (the only ones whose reading decides a target)."""
        behind: dict[str, set[Placement]] = {}
        for r in records:
            current, incarnation = now[r.logical]
            a = r.after
            if a is not None and a.incarnation == incarnation and 0 <= a.gen < current:
                behind.setdefault(r.logical, set()).add(a)
        out: dict[tuple[str, Placement], bool] = {}
        for logical, afters in behind.items():
            ordered = sorted(afters, key=_order)
            verdicts = await self.check(logical, ordered)
            for a, v in zip(ordered, verdicts, strict=True):
                out[(logical, a)] = v is Verdict.READ
        return out

    async def check(self, logical: str, placements: Sequence[Placement]) -> list[Verdict]:
        f = self.forgetful
        if not placements:
            return []
        incarnation = await f.incarnation.current()
        where = {
            p: TopicPartition(f.log.topic(logical, p.gen, incarnation), p.partition)
            for p in placements
            if p.incarnation == incarnation and p.gen >= 0
        }
        read = await f.committed.of(logical, set(where.values())) if where else {}
        out = []
        for p in placements:
            if p.incarnation != incarnation:
                out.append(Verdict.FORGOTTEN)
            elif p in where and confirmed(read[where[p]], p.offset):
                out.append(Verdict.READ)
            else:
                out.append(Verdict.WAITING)
        return out

    async def close(self) -> None:
        await self.sender.close()


def _order(p: Placement) -> tuple[int, int, int, str]:
    return (p.gen, p.partition, p.offset, p.incarnation)


class EmbeddedEventLog:
    """The port on the embedded broker (services/common/log_port.py). Its publishers and
    readers share one view of the broker (its incarnation, the groups' offsets, the topics)."""

    def __init__(
        self,
        bootstrap: str,
        layout: EventLog,
        readers: Mapping[str, tuple[str, ...]],
        idempotent: bool = False,
        forgetful: Forgetful | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.layout = layout
        self.idempotent = idempotent
        self.forgetful = forgetful or forgetful_of(bootstrap, layout, readers)

    def publisher(self, client_id: str) -> EmbeddedPublisher:
        return EmbeddedPublisher(Sender(self.bootstrap, self.idempotent, client_id), self.forgetful)

    def reader(
        self, service: str, logicals: Sequence[str], client_id: str, share: tuple[int, int]
    ) -> Reader:
        # No group membership: the reader assigns itself its share of every live generation.
        inner = consumer(self.bootstrap, self.layout.namespace.group(service), client_id=client_id)
        made = GenerationConsumer(inner, self.layout, logicals, self.forgetful.incarnation, share)
        return ConsumerReader(made, self.layout.namespace)

    def housekeeper(self) -> TopicKeeper:
        f = self.forgetful
        return TopicKeeper(self.bootstrap, self.layout, f.incarnation, f.committed)

    async def close(self) -> None:
        await self.forgetful.close()
