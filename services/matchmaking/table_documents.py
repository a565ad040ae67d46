"""The lobby's table documents: what a table is in the lobby (its seats, options, status and
party code), and the one way they change: read, change in memory, written only if still what
was read (compare-and-set on the LobbyRepository, retried on a race), so two players racing for
the last seat cannot both get it."""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from bg.table.v1 import table_pb2
from services.common.clock import now_ms
from services.common.errors import InvalidArgument, NotFound, ServiceError
from services.contracts.seats import is_computer
from services.matchmaking.ports import LobbyRepository

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: readable aloud
CODE_LENGTH = 6


class LobbyStatus(StrEnum):
    """A table's life in the lobby (the wire's LobbyTable.status carries the value)."""

    OPEN = "open"  # seats to fill
    DEALING = "dealing"  # escrow and match creation under way (the saga)
    DEALT = "dealt"  # the match is on the table service
    CLOSED = "closed"


IN_ANOTHER_MATCH = "in_another_match"  # a close reason: "in_another_match:<player>"
RESTRICTED = "restricted"  # a close reason: "restricted:<player>" (issue 61)
RESTRICTED_WORDS = (
    "after a review of your play, this account plays casual unrated games only: no wagered, "
    "scored or rated match and no tournament. To appeal, write to this server's operators "
    "quoting your player name"
)


@dataclass
class Table:
    table_id: str
    code: str
    host_id: str
    options: dict[str, Any]  # TableOptions as JSON (protobuf field names)
    public: bool
    player_ids: list[str]
    status: LobbyStatus = LobbyStatus.OPEN
    match_id: str = ""
    fingerprint: str = ""
    close_reason: str = ""
    code_expires_ms: int = 0
    matches: int = 0
    dealing_since_ms: int = 0
    quick: bool = False  # paired by quick match: dealt when full, casual too (no host to Start)
    created_ms: int = field(default_factory=now_ms)
    tournament_id: str = ""  # a tournament's pairing: seated by the director, dealt at once

    def proto_options(self) -> table_pb2.TableOptions:
        from google.protobuf import json_format

        return json_format.ParseDict(self.options, table_pb2.TableOptions())

    @classmethod
    def from_json(cls, raw: str | bytes) -> Table:
        doc = json.loads(raw)
        return cls(**{**doc, "status": LobbyStatus(doc["status"])})

    @property
    def vs_cpu(self) -> bool:
        return any(is_computer(p) for p in self.player_ids)

    @property
    def watchable(self) -> bool:
        """I-35: anyone may watch a public table, and a wagered or scored quick match; a
        player's opt-out (SetPrivacy) is the gateway's to apply, which keeps that preference."""
        if self.public or self.tournament_id:
            return True
        return self.quick and self.options.get("profile") in ("wagered", "scored")


def options_key(opts: table_pb2.TableOptions) -> str:
    """Canonical text of the options: quick match pairs only identical keys."""
    return opts.SerializeToString(deterministic=True).hex()


def ranked_or_staked(opts: table_pb2.TableOptions) -> bool:
    """Play a fair-play restriction keeps a player from (issue 61): diamonds (wagered), the
    boards (scored, rated casual or wagered: trophies and ratings). A tournament's matches too."""
    scored = opts.profile == "scored" and not opts.test_game  # I-19: a test game counts nowhere
    return opts.profile == "wagered" or scored or opts.rated or opts.tournament


def staked(opts: table_pb2.TableOptions) -> bool:
    """A match played for a bet: escrowed at the deal, one at a time per player (W-1). A
    wagered tournament's matches are not: the buy-in was the stake."""
    return opts.profile == "wagered" and not opts.tournament


def options_json(opts: table_pb2.TableOptions) -> dict[str, Any]:
    from google.protobuf import json_format

    return dict(json_format.MessageToDict(opts, preserving_proto_field_name=True))


def normalize_code(text: str) -> str:
    code = text.strip().rstrip("/").rsplit("/", 1)[-1].upper()
    if len(code) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in code):
        raise InvalidArgument("INVALID_CODE", "a party code is 6 letters/digits", field="code")
    return code


class TableDocuments:
    def __init__(self, store: LobbyRepository, code_ttl_s: int) -> None:
        self.store = store
        self.code_ttl_s = code_ttl_s

    async def get(self, table_id: str) -> Table:
        raw = await self.store.read(table_id)
        if raw is None:
            raise NotFound("UNKNOWN_TABLE", f"no table {table_id}", field="table_id")
        return Table.from_json(raw)

    async def update(
        self, table_id: str, change: Callable[[Table], Awaitable[None] | None]
    ) -> Table:
        """Read, change, then write only if the document is still what was read
        (compare-and-set, retried on a race); `change` raises to refuse, mutates to accept."""
        for _ in range(50):
            raw = await self.store.read(table_id)
            if raw is None:
                raise NotFound("UNKNOWN_TABLE", f"no table {table_id}", field="table_id")
            table = Table.from_json(raw)
            result = change(table)
            if result is not None:
                await result
            listed = table.public and table.status == LobbyStatus.OPEN and "" in table.player_ids
            written = await self.store.save_if_unchanged(
                table_id,
                raw,
                json.dumps(asdict(table)),
                table.created_ms if listed else None,
                table.dealing_since_ms if table.status == LobbyStatus.DEALING else None,
            )
            if written:
                return table
        raise ServiceError("BUSY", "the table is busy; try again")

    async def new_code(self, table_id: str) -> str:
        for _ in range(20):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            if await self.store.reserve_code(code, table_id, self.code_ttl_s):
                return code
        raise ServiceError("BUSY", "could not allocate a party code")
