"""The event log port on the embedded broker that forgets (BG_KAFKA_LOG=embedded): generations,
the broker's incarnation, the groups' commits as confirmation, the outboxes replayed
(services/common/embedded_generations.py says why and how).

A publisher sends each record to its topic's current generation, except a keyed record whose
key's last record (`Outgoing.follows`) is in the previous generation and not read by every group
yet: it stays there, so each group reads a key's records in order across the switch; one whose
last record is two or more generations back and unread waits (Unsent.WAIT); one whose last
record the broker forgot (another incarnation) is Unsent.RESEND (its publisher sends those again
first). A record's receipt is where it went (`Placed`, written as text); it is READ once every
group has committed past it, and LOST once the broker restarted without it.
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
from services.common.log_port import Outgoing, Reader, Receipt, Unsent, Verdict

MAX_HOLD = 5  # generations a key waits at most for a lagging group


@dataclass(frozen=True, order=True)
class Placed:
    """Where a record went: its generation, partition and offset on the broker's incarnation
    (gen -1: nowhere, never read)."""

    gen: int
    partition: int
    offset: int
    incarnation: str

    def receipt(self) -> Receipt:
        return Receipt(f"{self.incarnation}/{self.gen}/{self.partition}/{self.offset}")

    @staticmethod
    def of(receipt: Receipt | None) -> Placed | None:
        """The placement a receipt names; None for none (KEPT, or one another log wrote)."""
        incarnation, *numbers = (receipt or "").split("/")
        try:
            gen, partition, offset = (int(n) for n in numbers)
        except ValueError:
            return None
        return Placed(gen, partition, offset, incarnation)


NOWHERE = Placed(-1, 0, -1, "")


@dataclass(frozen=True)
class Target:
    """Where a record goes this pass: a generation, or why it is not sent."""

    gen: int
    unsent: Unsent | None = None


def target_of(after: Placed | None, read: bool, current: int, incarnation: str) -> Target:
    """The generation a key's next record goes to, given where its last one went (`after`),
    whether every group has read that one, and the current generation and incarnation."""
    if after is None or after.gen < 0:
        return Target(current)
    if after.incarnation != incarnation:
        return Target(current, Unsent.RESEND)
    if after.gen < current and not read:
        if after.gen == current - 1:
            return Target(after.gen)  # stay: its records there are not all read yet
        if after.gen > current - MAX_HOLD:
            return Target(after.gen, Unsent.WAIT)
        # else a group is MAX_HOLD periods behind: its order is given up (its lag alert fired
        # long ago) rather than stopping every key for it.
    return Target(max(current, after.gen))  # never back: generations are read in order


class EmbeddedPublisher:
    def __init__(self, sender: Sender, forgetful: Forgetful) -> None:
        self.sender = sender
        self.forgetful = forgetful

    async def publish(self, records: Sequence[Outgoing], at_ms: int) -> list[Receipt | Unsent]:
        f = self.forgetful
        now: dict[str, tuple[int, str]] = {}
        for logical in dict.fromkeys(r.logical for r in records):
            now[logical] = await f.now(logical, at_ms)
        afters = [Placed.of(r.follows) for r in records]
        read = await self._read_afters(records, afters, now)
        targets = [
            target_of(a, a is not None and read.get((r.logical, a), False), *now[r.logical])
            for r, a in zip(records, afters, strict=True)
        ]
        out: list[Receipt | Unsent] = []
        sending: list[tuple[int, str, Outgoing]] = []
        for i, (r, t) in enumerate(zip(records, targets, strict=True)):
            out.append(t.unsent or Unsent.WAIT)  # a receipt below for each one sent
            if t.unsent is None:
                sending.append((i, f.log.topic(r.logical, t.gen, now[r.logical][1]), r))
        await f.topics.ensure({topic for _, topic, _ in sending})
        sent = await self.sender.send([(topic, r) for _, topic, r in sending])
        for (i, _, r), (partition, offset) in zip(sending, sent, strict=True):
            placed = Placed(targets[i].gen, partition, offset, now[r.logical][1])
            out[i] = placed.receipt()
        return out

    async def _read_afters(
        self,
        records: Sequence[Outgoing],
        afters: Sequence[Placed | None],
        now: Mapping[str, tuple[int, str]],
    ) -> dict[tuple[str, Placed], bool]:
        """Whether every group has read each record's previous one (`afters`) where that is in
        an older generation of the current incarnation (the only ones whose reading decides a
        target)."""
        behind: dict[str, set[Placed]] = {}
        for r, a in zip(records, afters, strict=True):
            current, incarnation = now[r.logical]
            if a is not None and a.incarnation == incarnation and 0 <= a.gen < current:
                behind.setdefault(r.logical, set()).add(a)
        out: dict[tuple[str, Placed], bool] = {}
        for logical, placed in behind.items():
            ordered = sorted(placed)
            verdicts = await self._check(logical, ordered)
            for a, v in zip(ordered, verdicts, strict=True):
                out[(logical, a)] = v is Verdict.READ
        return out

    async def check(self, logical: str, receipts: Sequence[Receipt]) -> list[Verdict]:
        """A receipt this log did not write (KEPT, another log's) names nowhere: LOST (its
        publisher sends the record again; consumers dedupe)."""
        return await self._check(logical, [Placed.of(r) or NOWHERE for r in receipts])

    async def _check(self, logical: str, placements: Sequence[Placed]) -> list[Verdict]:
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
                out.append(Verdict.LOST)
            elif p in where and confirmed(read[where[p]], p.offset):
                out.append(Verdict.READ)
            else:
                out.append(Verdict.WAITING)
        return out

    async def close(self) -> None:
        await self.sender.close()


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
