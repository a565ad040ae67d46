"""Structured logs: one JSON object a line (or plain text locally), secrets masked.

Redaction happens in the formatter, so no call site can leak a token, seed or password by
passing it as an `extra` field or embedding a URL with credentials in a message.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any

from services.common.topics import GENERATION

SECRET_KEYS = re.compile(r"token|secret|seed|password|passwd|authorization|api_key|device", re.I)
_URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:/@\s]*):[^@/\s]+@", re.I)
_KV_SECRET = re.compile(
    r"(?P<key>\b\w*(?:token|secret|seed|password|passwd|api_key|device)\w*\b\s*[=:]\s*)"
    r"(?P<val>[^\s,;]+)",
    re.I,
)

_STANDARD_ATTRS = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}


def redact_text(text: str) -> str:
    """Mask URL passwords and `secret=value` pairs in free text."""
    text = _URL_PASSWORD.sub(r"\g<scheme>\g<user>:***@", text)
    return _KV_SECRET.sub(r"\g<key>***", text)


def _redact_value(key: str, value: Any) -> Any:
    if SECRET_KEYS.search(key):
        return "***"
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: _redact_value(str(k), v) for k, v in value.items()}
    return value


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str, replica: str) -> None:
        super().__init__()
        self.service = service
        self.replica = replica

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "msg": redact_text(record.getMessage()),
        }
        if self.replica:
            doc["replica"] = self.replica
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                doc[key] = _redact_value(key, value)
        if record.exc_info:
            doc["exc"] = redact_text(self.formatException(record.exc_info))
        return json.dumps(doc, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extras = {
            k: _redact_value(k, v)
            for k, v in record.__dict__.items()
            if k not in _STANDARD_ATTRS and not k.startswith("_")
        }
        line = f"{record.levelname:<7} {record.name}: {redact_text(record.getMessage())}"
        if extras:
            line += " " + " ".join(f"{k}={v}" for k, v in extras.items())
        if record.exc_info:
            line += "\n" + redact_text(self.formatException(record.exc_info))
        return line


class GoneGenerations(logging.Filter):
    """aiokafka logs at ERROR each metadata refresh that does not find a topic it was asked
    about, and each commit to a partition the broker does not know. On the embedded log that is
    a generation deleted once every group had read it: the generation consumer lets it go at its
    next look, so the line is no error (it was ~75 a minute under `make up`). Such lines become
    DEBUG; any other topic's stay ERRORs."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else (record.args,)
        if record.msg == "Topic %s not found in cluster metadata":
            gone = bool(GENERATION.search(str(args[0])))
        elif str(record.msg).startswith("OffsetCommit failed for group %s on partition %s"):
            # A commit to a generation deleted meanwhile: the consumer's commits are bounded and
            # its next look drops the partition (`event_log`).
            topic = getattr(args[1], "topic", "") if len(args) > 3 else ""
            gone = bool(GENERATION.search(topic)) and args[3] == "UnknownTopicOrPartitionError"
        else:
            return True
        if not gone:
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def configure(service: str, level: str, fmt: str, replica: str = "") -> None:
    """Send the root logger to stderr in the chosen format. Called once by a service's main."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service, replica) if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Third-party chatter at INFO drowns the service's own lines (websockets: a line for every
    # browser connection opened and closed; alembic: every migration's docstring at each start).
    for noisy in ("aiokafka", "kafka", "asyncio", "websockets", "alembic"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
    for name in ("aiokafka.cluster", "aiokafka.consumer.group_coordinator"):
        kafka_log = logging.getLogger(name)
        if not any(isinstance(f, GoneGenerations) for f in kafka_log.filters):
            kafka_log.addFilter(GoneGenerations())
