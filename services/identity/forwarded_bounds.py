"""Bounds on what the gateway forwards of a player's request, checked again here where it is
used (the gateway checks every string at its edge: services/gateway/edge_bounds.py), so this
service never stores unbounded input whoever calls it."""

from __future__ import annotations

from services.common import request_bounds
from services.contracts.bounds import DEFAULT_MAX, REASON_MAX


def bounded(value: str, field: str, limit: int = DEFAULT_MAX) -> str:
    return request_bounds.bounded(value, field, limit)


def table_id(value: str, field: str = "table_id") -> str:
    return request_bounds.required(value, field, DEFAULT_MAX)


def reason(text: str) -> str:
    """Why a player reports: 1..REASON_MAX characters, trimmed."""
    return request_bounds.reason(text, REASON_MAX)
