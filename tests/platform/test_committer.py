"""Consumers commit processed offsets at most once a second (issue 14 soak: per-batch commits
on Tansu over S3 cost the broker's store more CPU than the events), never before processing,
and nothing processed is left uncommitted when the loop ends; a commit a rebalance refused
does not stop the reader (services/common/kafka_log.py)."""

from __future__ import annotations

from services.common.event_log import Committer
from services.common.kafka_log import ConsumerReader
from services.common.topics import PLAIN


class _Consumer:
    def __init__(self) -> None:
        self.commits = 0

    async def commit(self) -> None:
        self.commits += 1


async def test_processed_batches_are_committed_once_a_second_and_at_the_end() -> None:
    now = [100.0]
    consumer = _Consumer()
    committer = Committer(consumer, every_s=1.0, clock=lambda: now[0])
    await committer.tick(processed=True)
    now[0] += 0.5
    await committer.tick(processed=True)
    assert consumer.commits == 0  # two batches, not yet a second
    now[0] += 0.5
    await committer.tick(processed=False)  # an empty poll still commits what was processed
    assert consumer.commits == 1
    now[0] += 5
    await committer.tick(processed=False)
    assert consumer.commits == 1  # nothing new: no commit
    await committer.tick(processed=True)
    await committer.flush()  # the loop ends: what was processed is committed
    assert consumer.commits == 2
    await committer.flush()
    assert consumer.commits == 2


async def test_a_commit_refused_by_a_rebalance_does_not_stop_the_consumer() -> None:
    """Restarting on CommitFailedError joined the group as a new member, which rebalanced it
    again and failed the other member's commit: a storm (soak, two wallets and two
    leaderboards). The refused offsets are the new owner's to re-read (consumers dedupe)."""
    from aiokafka.errors import CommitFailedError

    class Refusing(_Consumer):
        async def commit(self) -> None:
            self.commits += 1
            raise CommitFailedError("the group has already rebalanced")

    consumer = Refusing()
    committer = Committer(ConsumerReader(consumer, PLAIN), every_s=0.0)
    await committer.tick(processed=True)  # refused, and no exception
    await committer.tick(processed=False)
    assert consumer.commits == 1  # not retried: those offsets belong to the new owner now
    await committer.tick(processed=True)
    assert consumer.commits == 2
