"""Structured logs never carry secrets: tokens, seeds, passwords are masked."""

from __future__ import annotations

import json
import logging

import pytest
from aiokafka.structs import TopicPartition

from services.common.logs import JsonFormatter, TextFormatter, configure, redact_text


def _record(msg: str, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("bg.test", logging.INFO, __file__, 1, msg, (), None)
    record.__dict__.update(extra)
    return record


def test_json_line_has_fields_and_masks_secret_extras() -> None:
    line = JsonFormatter("table", "table-2").format(
        _record("command applied", table_id="t1", token="abc.def", dice_seed="00ff", seq=4)
    )
    doc = json.loads(line)
    assert doc["service"] == "table" and doc["replica"] == "table-2" and doc["level"] == "INFO"
    assert doc["table_id"] == "t1" and doc["seq"] == 4
    assert doc["token"] == "***" and doc["dice_seed"] == "***"
    assert "abc.def" not in line and "00ff" not in line


def test_secrets_in_free_text_are_masked() -> None:
    text = redact_text("connect postgresql://bg:s3cret@db/bg with token=eyJhbGc seed: 1234abcd")
    assert "s3cret" not in text and "eyJhbGc" not in text and "1234abcd" not in text
    assert "postgresql://bg:***@db/bg" in text


def test_text_format_masks_too() -> None:
    line = TextFormatter().format(_record("login", password="pw", player="p1"))
    assert "pw" not in line.replace("password", "") and "player=p1" in line


def test_third_party_chatter_stays_below_the_services_lines() -> None:
    """Issue 27, item 12: under `make up` every browser connection opened and closed was an INFO
    line of websockets' (128 of 129 lines during a match); warnings still show."""

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure("gateway", "INFO", "text")
        for name in ("websockets.server", "aiokafka.conn", "asyncio"):
            assert not logging.getLogger(name).isEnabledFor(logging.INFO), name
            assert logging.getLogger(name).isEnabledFor(logging.WARNING), name
        assert logging.getLogger("bg.gateway").isEnabledFor(logging.INFO)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)


def test_a_deleted_generation_missing_from_metadata_is_no_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Issue 44, item 2: aiokafka's "not found in cluster metadata" for an embedded log's
    # generation (deleted once read: expected, handled) is not an ERROR line; for any other
    # topic (production's, or a name misspelt) it still is.
    configure("t", "INFO", "text")
    cluster_log = logging.getLogger("aiokafka.cluster")
    cluster_log.error("Topic %s not found in cluster metadata", "table-events.g898193670.idc9a7c37")
    cluster_log.error("Topic %s not found in cluster metadata", "table-events")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "ERROR" in lines[0] and "table-events not found" in lines[0]
    configure("t", "INFO", "text")  # configured again: the filter is not added twice
    assert sum(type(f).__name__ == "GoneGenerations" for f in cluster_log.filters) == 1


def test_a_commit_to_a_deleted_generation_is_no_error(capsys: pytest.CaptureFixture[str]) -> None:
    configure("t", "INFO", "text")
    coordinator = logging.getLogger("aiokafka.consumer.group_coordinator")
    template = "OffsetCommit failed for group %s on partition %s with offset %s: %s"
    gone = TopicPartition("table-events.g359277648.ic540ccc8", 0)
    coordinator.error(template, "wallet", gone, 0, "UnknownTopicOrPartitionError")
    coordinator.error(template, "wallet", gone, 0, "NotCoordinatorForGroupError")
    coordinator.error(template, "wallet", TopicPartition("table-events", 0), 0,
                      "UnknownTopicOrPartitionError")  # fmt: skip
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all("ERROR" in line for line in lines)
    assert "NotCoordinatorForGroupError" in lines[0] and "topic='table-events'" in lines[1]
