"""The bounds a client must keep to, in one place: the servers check their input against these,
docs/protocol.md's "Bounds" table is made from them (tests/contracts/test_bounds.py holds the two
together), and a contract test sends each one's edge to the real gateway.

A string field with no bound of its own is at most DEFAULT_MAX characters (services/gateway/
edge_bounds.py checks every string of every request at the edge)."""

from __future__ import annotations

from dataclasses import dataclass

from services.common.errors import InvalidArgument

DEFAULT_MAX = 64  # characters of any string field not named below: ids, codes of the API
NAME_MIN, NAME_MAX = 3, 20  # an account's display name
NAME_RESERVED = ("cpu", "guest", "admin", "deleted")  # a display name may not start with these
GUEST_MAX = 32  # a guest's name
REASON_MAX = 200  # why a player reports, or an operator acts
HINT_MAX, HINT_DEFAULT = 10, 3  # plays in a hint
TOURNAMENT_NAME_MAX = 40
CHAT_MAX, CHAT_LIMIT = 300, 2000  # a chat message: BG_CHAT_MAX_CHARS' default, and its ceiling
EMAIL_MAX, PASSWORD_MIN, PASSWORD_MAX = 254, 10, 256
DEVICE_MIN, DEVICE_MAX = 32, 128
CODE_MAX = 256  # a party code, or a whole invite link


@dataclass(frozen=True)
class Bound:
    field: str  # as the request names it
    where: str  # which calls
    low: int
    high: int
    under: str  # the error code below `low` (or for a value not of the form)
    over: str  # the error code above `high`
    note: str = ""


BOUNDS = (
    Bound(
        "display_name", "Login, SetDisplayName", NAME_MIN, NAME_MAX, "INVALID_NAME",
        "INVALID_NAME",
        "letters or digits, with a space, `_` or `-` inside; not starting with "
        + ", ".join(NAME_RESERVED),
    ),
    Bound("guest_name", "Login (a guest)", 1, GUEST_MAX, "INVALID_NAME", "TOO_LONG",
          "printable characters"),
    Bound("reason", "ReportChat, every operator's act", 1, REASON_MAX, "REASON_REQUIRED",
          "TOO_LONG", "trimmed"),
    Bound("limit", "GetHint", 0, HINT_MAX, "INVALID_LIMIT", "INVALID_LIMIT",
          f"plays; 0 asks for {HINT_DEFAULT}"),
    Bound("name", "CreateTournament (operators)", 1, TOURNAMENT_NAME_MAX, "INVALID_NAME",
          "TOO_LONG", "trimmed"),
    Bound("code", "JoinByCode", 1, CODE_MAX, "MISSING", "TOO_LONG",
          "a party code, or the whole invite link"),
    Bound("email", "LinkEmail", 6, EMAIL_MAX, "INVALID_EMAIL", "TOO_LONG", "an address"),
    Bound("password", "LinkEmail", PASSWORD_MIN, PASSWORD_MAX, "WEAK_PASSWORD", "TOO_LONG"),
    Bound("device_id", "Login", DEVICE_MIN, DEVICE_MAX, "INVALID_DEVICE", "TOO_LONG",
          "letters, digits, `_` and `-`"),
    Bound("text", "SendChat", 1, CHAT_MAX, "CHAT_EMPTY", "CHAT_TOO_LONG",
          f"`BG_CHAT_MAX_CHARS` ({CHAT_MAX} by default, at most {CHAT_LIMIT}); no control "
          "characters"),
    Bound("table_id, player_id, match_id, request_id, command_id, ...", "every call", 0,
          DEFAULT_MAX, "MISSING", "TOO_LONG", "where a call needs it, empty is `MISSING`"),
)  # fmt: skip


def table() -> str:
    """The Bounds table of docs/protocol.md, as made from BOUNDS."""
    rows = [
        "| field | calls | bound | below | above | also |",
        "|---|---|---|---|---|---|",
    ]
    for b in BOUNDS:
        fields = ", ".join(
            f"`{f.strip()}`" if f.strip() != "..." else "..." for f in b.field.split(",")
        )
        rows.append(
            f"| {fields} | {b.where} | {b.low}..{b.high} | `{b.under}` | `{b.over}` | {b.note} |"
        )
    return "\n".join(rows) + "\n"


def hint_plays(limit: int) -> int:
    """HintRequest.limit: 0 = HINT_DEFAULT plays, 1..HINT_MAX; anything else is refused (the
    gateway before any work, the analysis service again where it evaluates)."""
    if not 0 <= limit <= HINT_MAX:
        raise InvalidArgument(
            "INVALID_LIMIT", f"limit is 0 ({HINT_DEFAULT}) or 1..{HINT_MAX}", field="limit"
        )
    return limit or HINT_DEFAULT
