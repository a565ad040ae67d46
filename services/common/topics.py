"""The namespace that keeps clusters sharing one broker apart, and how a topic's generations are
named (the cluster's topics and their readers: services/contracts/topics.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

GENERATION = re.compile(r"\.g(\d+)\.i([0-9a-f]+)$")  # an embedded log's topic suffix

NAMESPACE_PATTERN = r"[A-Za-z0-9_-]{0,40}"  # within Kafka's legal topic and group characters


@dataclass(frozen=True)
class Namespace:
    """One cluster's names on a broker (BG_KAFKA_NAMESPACE). Consumer groups are state on the
    broker: two clusters in one group split the partitions, and a member of one killed -9 holds
    partitions of the other until the broker evicts it; a prefix on topics and groups keeps
    them apart. Code and stored rows speak the logical names; only the Kafka edge maps them."""

    prefix: str = ""

    def topic(self, logical: str) -> str:
        return f"{self.prefix}.{logical}" if self.prefix else logical

    def group(self, service: str) -> str:
        return f"{self.prefix}.{service}" if self.prefix else service

    def logical(self, topic: str) -> str:
        """The logical name of one of this namespace's topics (a generation's too)."""
        topic = GENERATION.sub("", topic)
        head = f"{self.prefix}." if self.prefix else ""
        return topic[len(head) :] if head and topic.startswith(head) else topic

    def generation(self, logical: str, gen: int, incarnation: str) -> str:
        """Generation `gen` of a logical topic on an embedded broker's `incarnation`."""
        return f"{self.topic(logical)}.g{gen}.i{incarnation}"

    def generations(self, logical: str, topics: Iterable[str]) -> dict[tuple[str, int], str]:
        """The generations of `logical` among `topics`: (incarnation, gen) -> topic name."""
        base = self.topic(logical)
        found: dict[tuple[str, int], str] = {}
        for topic in topics:
            match = GENERATION.search(topic)
            if match and topic[: match.start()] == base:
                found[(match.group(2), int(match.group(1)))] = topic
        return found


PLAIN = Namespace()  # no prefix: the topics and groups by their own names
