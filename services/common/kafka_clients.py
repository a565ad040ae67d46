"""aiokafka clients that never create a topic by asking for it (every client of ours goes
through here)."""

from __future__ import annotations

import logging
from typing import Any

from aiokafka import AIOKafkaClient
from aiokafka.client import ConnectionGroup
from aiokafka.cluster import ClusterMetadata
from aiokafka.errors import KafkaError
from aiokafka.protocol.metadata import MetadataRequest

log = logging.getLogger("bg.kafka")


def never_create_topics(client: AIOKafkaClient) -> None:
    """Make `client` ask for metadata with allow_auto_topic_creation=false. aiokafka (0.14) always
    sends true, so a producer after a broker restart re-created `table-events` with the broker's
    default 4 partitions instead of 8 (issue #13). This is aiokafka's `_metadata_update` with
    that one flag changed; aiokafka is pinned below 0.15."""

    async def update(cluster_metadata: ClusterMetadata, topics: Any) -> bool:
        request = MetadataRequest(list(topics) if topics else None, False)
        node_ids: list[Any] = [b.nodeId for b in client.cluster.brokers()]
        bootstrap_id = ("bootstrap", ConnectionGroup.DEFAULT)
        if bootstrap_id in client._conns:
            node_ids.append("bootstrap")
        for node_id in node_ids:
            conn = await client._get_conn(node_id)
            if conn is None:
                continue
            try:
                metadata = await conn.send(request)
            except (KafkaError, TimeoutError) as err:
                log.warning("no metadata from Kafka node %s: %r", node_id, err)
                continue
            if not metadata.brokers:
                return False
            cluster_metadata.update_metadata(metadata)
            if bootstrap_id in client._conns and len(client.cluster.brokers()):
                client._conns.pop(bootstrap_id).close()
            return True
        cluster_metadata.failed_update(None)
        return False

    client._metadata_update = update
