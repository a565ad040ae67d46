"""Bounds on what clients send: every string has a length limit, checked at the edge
(services/common/request_bounds.py), and what each request must name.

A field over its limit is INVALID_ARGUMENT naming the field, and nothing is forwarded, so no
service and no error ever carries unbounded client input (error texts are cut as well, see
services/common/errors.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from google.protobuf.message import Message

from services.common import request_bounds
from services.common.errors import InvalidArgument
from services.contracts import bounds
from services.contracts.bounds import DEFAULT_MAX

# A code may come as a whole invite link; the account fields have their own bounds (checked
# again, in full, where they are used). services/contracts/bounds.py is the one list.
MAX_BY_FIELD = {
    "guest_name": bounds.GUEST_MAX,
    "code": bounds.CODE_MAX,
    "device_id": bounds.DEVICE_MAX,
    "email": bounds.EMAIL_MAX,
    "password": bounds.PASSWORD_MAX,
    "display_name": 40,  # longer is INVALID_NAME (the name's own rule), not TOO_LONG
    "refresh_token": 128,
    "text": bounds.CHAT_LIMIT,  # a chat message: its own bound is BG_CHAT_MAX_CHARS (at most this)
    "reason": bounds.REASON_MAX,  # why a player reports or an operator acts (`reason` below)
}
# What a request names, by request message: empty is MISSING naming the field, as one rule for
# every call (the services behind would each answer in their own words, or not at all).
REQUIRED = {
    "bg.matchmaking.v1.TableRequest": ("table_id",),
    "bg.matchmaking.v1.JoinByCodeRequest": ("code",),
    "bg.matchmaking.v1.TournamentRequest": ("tournament_id",),
    "bg.gateway.v1.ViewRequest": ("table_id",),
    "bg.gateway.v1.WatchRequest": ("table_id",),
    "bg.gateway.v1.HintRequest": ("table_id",),
    "bg.gateway.v1.SendChatRequest": ("table_id",),
    "bg.gateway.v1.GetChatRequest": ("table_id",),
    "bg.gateway.v1.ReportChatRequest": ("table_id", "message_id"),
    "bg.gateway.v1.MuteChatRequest": ("player_id",),
    "bg.gateway.v1.FollowRequest": ("player_id",),
    "bg.gateway.v1.BlockRequest": ("player_id",),
    "bg.gateway.v1.ChallengeRequest": ("player_id",),
    "bg.gateway.v1.AnswerChallengeRequest": ("challenge_id",),
    "bg.gateway.v1.ExportMatchRequest": ("match_id",),
    "bg.table.v1.GetMatchRecordRequest": ("table_id", "match_id"),
    "bg.leaderboard.v1.ArchivedMatchRequest": ("match_id",),
    "bg.analysis.v1.GetAnalysisRequest": ("match_id",),
}


def bounded(value: str, field: str, limit: int = DEFAULT_MAX) -> str:
    return request_bounds.bounded(value, field, limit)


def table_id(value: str, field: str = "table_id") -> str:
    return request_bounds.required(value, field, DEFAULT_MAX)


def check(request: Message, bounds: Mapping[str, int] = MAX_BY_FIELD) -> None:
    """Every string in `request` (nested messages included) within its limit: `bounds` by
    field name, DEFAULT_MAX for the rest; every field it must name (REQUIRED) named."""
    for name in REQUIRED.get(request.DESCRIPTOR.full_name, ()):
        if not getattr(request, name):
            raise InvalidArgument("MISSING", f"{name} is required", field=name)
    request_bounds.check_strings(request, bounds, DEFAULT_MAX)


def reason(text: str) -> str:
    """Why an operator acts or a player reports: 1..REASON_MAX characters, trimmed."""
    return request_bounds.reason(text, bounds.REASON_MAX)


def required_table() -> str:
    """docs/protocol.md's table of what each request must name, as made from REQUIRED."""
    rows = ["| request | must name |", "|---|---|"]
    for message, fields in REQUIRED.items():
        rows.append(f"| `{message}` | {', '.join(f'`{f}`' for f in fields)} |")
    return "\n".join(rows) + "\n"
