"""Consumers commit processed offsets at most once a second (issue 14 soak: per-batch commits
on Tansu over S3 cost the broker's store more CPU than the events), never before processing,
and nothing processed is left uncommitted when the loop ends."""

from __future__ import annotations

from services.common.kafka import Committer


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
