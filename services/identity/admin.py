"""The gRPC servicer of bg.admin.v1.AdminService: operators' tools, each call audited.

Served by the identity service, the operators' plane: it holds the accounts, bans and the audit
log itself, and calls the other services for the rest. An operator signs in with a name and key
from BG_OPERATOR_KEYS and gets a token of the operators' audience, signed with this service's
BG_OPERATOR_SECRET (services/common/tokens.py): a player's token is not one (the gateway signs
those under its own key), nor the other way round. Every
call writes its audit row before it acts (an action that cannot be audited is not done) and
completes it with the outcome afterwards, refused calls included.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from bg.leaderboard.v1 import leaderboard_pb2, leaderboard_pb2_grpc
from bg.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from bg.table.v1 import table_pb2, table_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common import request_bounds
from services.common.errors import (
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServiceError,
    Unauthenticated,
    grpc_errors,
    remote_call,
)
from services.common.shared_rate_limits import KeyOf, SharedLimiter, check, peer_address
from services.common.tokens import OPERATORS, Identity, TokenSigner
from services.contracts import money_keys
from services.contracts.bounds import DEFAULT_MAX, REASON_MAX, TOURNAMENT_NAME_MAX
from services.identity import forwarded_bounds
from services.identity.ban_list import BanList
from services.identity.chat_moderation import ChatModeration
from services.identity.ports import AccountsRepository, AuditRepository, Detail

log = logging.getLogger("bg.identity.admin")
Context = grpc.aio.ServicerContext[Any, Any]
T = TypeVar("T")
OPERATOR_PREFIX = "op:"
MIN_KEY = 32
# Every string an operator sends is bounded, as players' are (services/common/request_bounds.py):
# the rest (ids, keys, the audit filter) take the default of 64 characters.
# `name` is an operator's at login (1..32, and unknown ones fail as credentials) and a
# tournament's at its creation (forwarded_bounds.TOURNAMENT_NAME_MAX): the longer of the two.
ADMIN_BOUNDS = {"name": TOURNAMENT_NAME_MAX, "key": 256, "reason": REASON_MAX}


def parse_operator_keys(spec: str) -> dict[str, str]:
    """BG_OPERATOR_KEYS: `name=key,name=key`; names 1..32 of [A-Za-z0-9_-], keys 32+ chars."""
    keys: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, sep, key = part.partition("=")
        if (
            not sep
            or not name
            or len(name) > 32
            or not name.replace("-", "").replace("_", "").isalnum()
        ):
            raise ValueError("BG_OPERATOR_KEYS is name=key pairs separated by commas")
        if len(key) < MIN_KEY:
            raise ValueError(f"an operator key must be at least {MIN_KEY} characters")
        keys[name] = key
    return keys


# Every audited action: what BG_OPERATOR_RIGHTS grants, one by one.
ACTIONS = frozenset(
    {
        "lookup",
        "adjust",
        "ban",
        "unban",
        "close_table",
        "stale_escrows",
        "replay",
        "audit",
        "chat_reports",
        "chat_resolve",
        "chat_remove",
        "chat_silence",
        "tournament_create",
        "tournament_cancel",
        "stale_pools",
        "pool_refund",
        "restrict",
        "unrestrict",
        "review",
        "review_decide",
        "tournaments",
    }
)


def parse_operator_rights(spec: str, operators: Mapping[str, str]) -> dict[str, frozenset[str]]:
    """BG_OPERATOR_RIGHTS: `name=right+right,...` for the operators limited to some actions
    (an operator not named may take every one)."""
    rights: dict[str, frozenset[str]] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, sep, listed = part.partition("=")
        given = frozenset(filter(None, (r.strip() for r in listed.split("+"))))
        if not sep or name not in operators:
            raise ValueError(f"BG_OPERATOR_RIGHTS: {name!r} is not an operator of BG_OPERATOR_KEYS")
        if unknown := sorted(given - ACTIONS):
            raise ValueError(
                f"BG_OPERATOR_RIGHTS: no right {', '.join(unknown)}; the rights: "
                + ", ".join(sorted(ACTIONS))
            )
        rights[name] = given
    return {name: rights.get(name, ACTIONS) for name in operators}


class OperatorLimits:
    """Operators' calls per second from one address, and sign-ins per second per operator name,
    over every identity replica (services/common/shared_rate_limits.py)."""

    def __init__(self, redis: Any, per_peer_s: float, per_login_s: float, key_of: KeyOf) -> None:
        self.peers = SharedLimiter(redis, "operator-peer", per_peer_s, key_of=key_of)
        self.logins = SharedLimiter(redis, "operator-login", per_login_s, key_of=key_of)

    def check_peer(self, address: str) -> None:
        check(self.peers, address, "operator calls per second from one address")

    def check_login(self, name: str) -> None:
        check(self.logins, name, "sign-ins per second for one operator")

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(self.peers.run(stop), self.logins.run(stop))


def _limit(asked: int) -> int:
    """A listing's size: 1..200, 50 when not given."""
    limit = asked or 50
    if not 1 <= limit <= 200:
        raise InvalidArgument("INVALID_LIMIT", "limit must be 1..200", field="limit")
    return limit


def _target(text: str, field: str) -> str:
    if not text or len(text) > 64:
        raise InvalidArgument("INVALID_TARGET", f"{field} is 1..64 characters", field=field)
    return text


async def _or_empty(call: Awaitable[T], empty: T, player: str) -> T:
    """An analysis call's answer, or `empty` when the analysis service is out of reach: the rest
    of a player's record matters more than these signals."""
    try:
        return await remote_call(call)
    except ServiceError as err:
        log.warning("no analysis figures", extra={"player_id": player, "why": err.code})
        return empty


@dataclass(frozen=True)
class Services:
    """The services the operators' tools call, with the wallet's operator token."""

    lobby: matchmaking_pb2_grpc.MatchmakingServiceAsyncStub
    wallet: wallet_pb2_grpc.WalletServiceAsyncStub
    tables: table_pb2_grpc.TableServiceAsyncStub
    boards: leaderboard_pb2_grpc.LeaderboardServiceAsyncStub
    analyses: analysis_pb2_grpc.AnalysisServiceAsyncStub
    wallet_token: str


@dataclass(frozen=True)
class Operators:
    """Who may act: the operators' keys, the signer of their tokens, their rate limits."""

    keys: Mapping[str, str]
    signer: TokenSigner
    limits: OperatorLimits
    rights: Mapping[str, frozenset[str]] | None = None  # None: every operator may do all


class AdminServicer(admin_pb2_grpc.AdminServiceServicer):
    def __init__(
        self,
        operators: Operators,
        accounts: AccountsRepository,
        audit: AuditRepository,
        bans: BanList,
        chat: ChatModeration,
        services: Services,
    ) -> None:
        self.signer = operators.signer
        self.keys = dict(operators.keys)
        self.rights = dict(operators.rights or dict.fromkeys(self.keys, ACTIONS))
        self.limits = operators.limits
        self.ttl_s = operators.signer.ttl_s
        self.accounts = accounts
        self.audit = audit
        self.bans = bans
        self.chat = chat
        self.lobby = services.lobby
        self.wallet = services.wallet
        self.tables = services.tables
        self.boards = services.boards
        self.analyses = services.analyses
        self.wallet_auth = [("x-operator-token", services.wallet_token)]
        self._dummy = secrets.token_urlsafe(MIN_KEY)

    # -- the frame: who, rate, audit -----------------------------------------------------------

    def _operator(self, context: Context) -> str:
        header = str(dict(context.invocation_metadata() or ()).get("authorization", ""))
        if not header.startswith("Bearer "):
            raise Unauthenticated("NO_TOKEN", "send authorization: Bearer <operator token>")
        try:
            identity = self.signer.verify(header.removeprefix("Bearer "), OPERATORS)
        except Unauthenticated as err:
            if err.code == "BAD_TOKEN":  # e.g. a player's token: valid, but not an operator's
                raise PermissionDenied(
                    "NOT_OPERATOR", "this call needs an operator's token"
                ) from None
            raise
        name = identity.player_id.removeprefix(OPERATOR_PREFIX)
        if name not in self.keys:  # an operator removed from BG_OPERATOR_KEYS stops at once
            raise PermissionDenied("NOT_OPERATOR", "this operator is no longer configured")
        return name

    async def _audited(
        self,
        context: Context,
        request: Message,
        action: str,
        target_field: str,
        act: Callable[[str], Awaitable[tuple[T, Detail]]],
    ) -> T:
        """Check the request's bounds and the caller, write the audit row, act, complete the
        row with the outcome. `target_field` names the request's field the action is on."""
        target = str(getattr(request, target_field)) if target_field else ""
        reason = str(getattr(request, "reason", "")).strip()
        operator = "-"
        try:
            request_bounds.check_strings(request, ADMIN_BOUNDS, DEFAULT_MAX)
            if target_field:
                _target(target, target_field)
            self.limits.check_peer(peer_address(context.peer()))
            operator = self._operator(context)
            if action not in self.rights.get(operator, frozenset()):
                raise PermissionDenied(
                    "NOT_ALLOWED", f"operator {operator} may not {action} (BG_OPERATOR_RIGHTS)"
                )
        except ServiceError as err:
            # Refused calls are audited too, with what they sent cut to the log's bounds.
            await self.audit.record(operator, action, target[:64], reason[:200], err.code)
            raise
        entry = await self.audit.record(operator, action, target, reason, "started")
        try:
            result, detail = await act(operator)
        except ServiceError as err:
            await self.audit.finish(entry, err.code, {"message": err.message})
            raise
        except Exception:
            await self.audit.finish(entry, "INTERNAL", {})
            raise
        await self.audit.finish(entry, "ok", detail)
        return result

    # -- calls ---------------------------------------------------------------------------------

    @grpc_errors
    async def OperatorLogin(
        self, request: admin_pb2.OperatorLoginRequest, context: Context
    ) -> admin_pb2.OperatorLoginResponse:
        name = request.name[:32]
        try:
            request_bounds.check_strings(request, ADMIN_BOUNDS, DEFAULT_MAX)
            self.limits.check_peer(peer_address(context.peer()))
            self.limits.check_login(name)
            key = self.keys.get(name, self._dummy)
            if not hmac.compare_digest(request.key.encode(), key.encode()) or name not in self.keys:
                raise Unauthenticated("BAD_CREDENTIALS", "wrong operator name or key")
        except ServiceError as err:
            await self.audit.record(name or "-", "login", name, "", err.code)
            raise
        identity = Identity(OPERATOR_PREFIX + name, name, operator=True)
        token, expires = self.signer.issue(identity, ttl_s=self.ttl_s)
        await self.audit.record(name, "login", name, "", "ok")
        return admin_pb2.OperatorLoginResponse(
            token=token, expires_ms=expires, rights=sorted(self.rights.get(name, ()))
        )

    @grpc_errors
    async def LookupPlayer(
        self, request: admin_pb2.LookupPlayerRequest, context: Context
    ) -> admin_pb2.PlayerRecord:
        player = request.player_id

        async def act(_: str) -> tuple[admin_pb2.PlayerRecord, Detail]:
            account = await self.accounts.record(player)
            balance = await remote_call(
                self.wallet.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player), timeout=10)
            )
            ledger = await remote_call(
                self.wallet.GetHistory(
                    wallet_pb2.GetHistoryRequest(player_id=player, limit=20), timeout=10
                )
            )
            tables = await remote_call(
                self.lobby.PlayerTables(
                    matchmaking_pb2.PlayerTablesRequest(player_id=player), timeout=10
                )
            )
            profile = await remote_call(
                self.boards.Profile(leaderboard_pb2.ProfileRequest(player_id=player), timeout=10)
            )
            matches = await remote_call(
                self.boards.History(
                    leaderboard_pb2.HistoryRequest(player_id=player, limit=20), timeout=10
                )
            )
            record = admin_pb2.PlayerRecord(
                player_id=player,
                balance=balance.balance,
                ledger=ledger.entries,
                tables=tables.tables,
                profile=profile,
                matches=matches.matches,
                error_trend=await self._trend(player),
                fair_play=await self._evidence(player),
                **account,
            )
            return record, {}

        return await self._audited(context, request, "lookup", "player_id", act)

    async def _trend(self, player: str) -> analysis_pb2.PlayerTrendResponse:
        """The player's error rate per match (empty when the analysis is out of reach)."""
        asked = analysis_pb2.PlayerTrendRequest(player_id=player, limit=50)
        empty = analysis_pb2.PlayerTrendResponse()
        return await _or_empty(self.analyses.PlayerTrend(asked, timeout=5), empty, player)

    async def _evidence(self, player: str) -> analysis_pb2.PlayerEvidenceResponse:
        """The fair-play test's evidence (empty when the analysis is out of reach)."""
        asked = analysis_pb2.PlayerTrendRequest(player_id=player, limit=50)
        empty = analysis_pb2.PlayerEvidenceResponse()
        return await _or_empty(self.analyses.PlayerEvidence(asked, timeout=5), empty, player)

    @grpc_errors
    async def Adjust(
        self, request: admin_pb2.AdjustRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        player = request.player_id

        async def act(operator: str) -> tuple[wallet_pb2.OperationResponse, Detail]:
            reason = forwarded_bounds.reason(request.reason)
            if not request.idempotency_key:
                raise InvalidArgument(
                    "INVALID_IDEMPOTENCY_KEY",
                    "an adjustment needs an idempotency key",
                    field="idempotency_key",
                )
            reply = await remote_call(
                self.wallet.Adjust(
                    wallet_pb2.AdjustRequest(
                        idempotency_key=f"admin:{request.idempotency_key}",
                        player_id=player,
                        amount=request.amount,
                        operator=operator,
                        reason=reason,
                    ),
                    metadata=self.wallet_auth,
                    timeout=10,
                )
            )
            return reply, {"amount": request.amount, "operation_id": reply.operation_id}

        return await self._audited(context, request, "adjust", "player_id", act)

    @grpc_errors
    async def Ban(self, request: admin_pb2.BanRequest, context: Context) -> admin_pb2.BanResponse:
        player = request.player_id

        async def act(operator: str) -> tuple[admin_pb2.BanResponse, Detail]:
            left = await self._ban(player, operator, forwarded_bounds.reason(request.reason))
            return admin_pb2.BanResponse(player_id=player, banned=True, left_tables=left), {
                "left_tables": left
            }

        return await self._audited(context, request, "ban", "player_id", act)

    async def _ban(self, player: str, operator: str, reason: str) -> list[str]:
        """First cut the player off (no call of theirs passes from here), then leave their
        tables for them: the table applies the profile's leaving rule to each match."""
        await self.accounts.ban(player, operator, reason)
        await self.bans.ban(player)
        return await self._leave_all(player)

    async def _leave_all(self, player: str) -> list[str]:
        tables = await remote_call(
            self.lobby.PlayerTables(
                matchmaking_pb2.PlayerTablesRequest(player_id=player), timeout=10
            )
        )
        left = []
        for table in tables.tables:
            leave = matchmaking_pb2.TableRequest(player_id=player, table_id=table.table_id)
            try:
                await remote_call(self.lobby.LeaveTable(leave, timeout=10))
            except ServiceError as err:  # a match already over: nothing to leave
                log.info(
                    "ban: table not left", extra={"table_id": table.table_id, "code": err.code}
                )
                continue
            left.append(table.table_id)
        return left

    @grpc_errors
    async def Unban(self, request: admin_pb2.BanRequest, context: Context) -> admin_pb2.BanResponse:
        player = request.player_id

        async def act(_: str) -> tuple[admin_pb2.BanResponse, Detail]:
            forwarded_bounds.reason(request.reason)
            was = await self.accounts.unban(player)
            await self.bans.unban(player)
            return admin_pb2.BanResponse(player_id=player, banned=False), {"was_banned": was}

        return await self._audited(context, request, "unban", "player_id", act)

    @grpc_errors
    async def Restrict(
        self, request: admin_pb2.RestrictRequest, context: Context
    ) -> admin_pb2.RestrictResponse:
        player = request.player_id

        async def act(operator: str) -> tuple[admin_pb2.RestrictResponse, Detail]:
            new = await self._restrict(player, operator, forwarded_bounds.reason(request.reason))
            return admin_pb2.RestrictResponse(player_id=player, restricted=True), {"new": new}

        return await self._audited(context, request, "restrict", "player_id", act)

    async def _restrict(self, player: str, operator: str, reason: str) -> bool:
        """Recorded, then in the live set matchmaking reads: the next stake is refused at once
        on every gateway. True when the player was not restricted before."""
        new = await self.accounts.restrict(player, operator, reason)
        await self.bans.restrict(player)
        return new

    @grpc_errors
    async def Unrestrict(
        self, request: admin_pb2.RestrictRequest, context: Context
    ) -> admin_pb2.RestrictResponse:
        player = request.player_id

        async def act(_: str) -> tuple[admin_pb2.RestrictResponse, Detail]:
            forwarded_bounds.reason(request.reason)
            was = await self.accounts.unrestrict(player)
            await self.bans.unrestrict(player)
            return admin_pb2.RestrictResponse(player_id=player, restricted=False), {
                "was_restricted": was
            }

        return await self._audited(context, request, "unrestrict", "player_id", act)

    @grpc_errors
    async def ListFlags(
        self, request: analysis_pb2.ListFlagsRequest, context: Context
    ) -> analysis_pb2.ListFlagsResponse:
        async def act(_: str) -> tuple[analysis_pb2.ListFlagsResponse, Detail]:
            found = await remote_call(self.analyses.ListFlags(request, timeout=10))
            return found, {"flags": len(found.flags), "state": request.state or "open"}

        return await self._audited(context, request, "review", "", act)

    @grpc_errors
    async def DecideFlag(
        self, request: admin_pb2.DecideFlagRequest, context: Context
    ) -> analysis_pb2.FairPlayFlag:
        async def act(operator: str) -> tuple[analysis_pb2.FairPlayFlag, Detail]:
            reason = forwarded_bounds.reason(request.reason)
            if request.decision not in ("clear", "restrict", "ban"):
                raise InvalidArgument(
                    "INVALID_DECISION", "decision is clear, restrict or ban", field="decision"
                )
            asked = analysis_pb2.ListFlagsRequest(state="open", limit=1, flag_id=request.flag_id)
            found = await remote_call(self.analyses.ListFlags(asked, timeout=10))
            if request.flag_id <= 0 or not found.flags:
                raise NotFound("UNKNOWN_FLAG", f"no open fair-play flag {request.flag_id}")
            player = found.flags[0].player_id
            # The action first, then the flag's record: a decision whose record failed is
            # asked again, and restricting or banning twice changes nothing.
            if request.decision == "restrict":
                await self._restrict(player, operator, reason)
            elif request.decision == "ban":
                await self._ban(player, operator, reason)
            record = analysis_pb2.RecordDecisionRequest(
                flag_id=request.flag_id,
                decision=request.decision,
                operator=operator,
                reason=reason,
            )
            decided = await remote_call(self.analyses.DecideFlag(record, timeout=10))
            return decided, {"player_id": player, "decision": request.decision}

        return await self._audited(context, request, "review_decide", "flag_id", act)

    @grpc_errors
    async def CloseTable(
        self, request: admin_pb2.CloseTableRequest, context: Context
    ) -> admin_pb2.CloseTableResponse:
        table_id = request.table_id

        async def act(_: str) -> tuple[admin_pb2.CloseTableResponse, Detail]:
            forwarded_bounds.reason(request.reason)
            reply = await remote_call(
                self.tables.CloseMatch(table_pb2.CloseMatchRequest(table_id=table_id), timeout=10)
            )
            return admin_pb2.CloseTableResponse(table_id=table_id, seq=reply.seq), {
                "seq": reply.seq
            }

        return await self._audited(context, request, "close_table", "table_id", act)

    @grpc_errors
    async def CreateTournament(
        self, request: matchmaking_pb2.CreateTournamentRequest, context: Context
    ) -> matchmaking_pb2.Tournament:
        async def act(_: str) -> tuple[matchmaking_pb2.Tournament, Detail]:
            found = await remote_call(self.lobby.CreateTournament(request, timeout=10))
            return found, {"tournament_id": found.tournament_id, "kind": found.kind}

        return await self._audited(context, request, "tournament_create", "", act)

    @grpc_errors
    async def ListTournaments(
        self, request: matchmaking_pb2.ListTournamentsRequest, context: Context
    ) -> matchmaking_pb2.ListTournamentsResponse:
        async def act(_: str) -> tuple[matchmaking_pb2.ListTournamentsResponse, Detail]:
            found = await remote_call(self.lobby.ListTournaments(request, timeout=10))
            return found, {"tournaments": len(found.tournaments)}

        return await self._audited(context, request, "tournaments", "", act)

    @grpc_errors
    async def CancelTournament(
        self, request: matchmaking_pb2.CancelTournamentRequest, context: Context
    ) -> matchmaking_pb2.Tournament:
        async def act(_: str) -> tuple[matchmaking_pb2.Tournament, Detail]:
            forwarded_bounds.reason(request.reason)
            found = await remote_call(self.lobby.CancelTournament(request, timeout=10))
            return found, {"status": found.status}

        return await self._audited(context, request, "tournament_cancel", "tournament_id", act)

    async def _tournament_status(self, tournament_id: str) -> str:
        """Matchmaking's status of the tournament, "" when it does not know it; its other
        failures are raised (matchmaking away: nothing is called orphaned)."""
        asked = matchmaking_pb2.TournamentRequest(tournament_id=tournament_id)
        try:
            found = await remote_call(self.lobby.GetTournament(asked, timeout=10))
        except ServiceError as err:
            if err.code == "UNKNOWN_TOURNAMENT":
                return ""
            raise
        return found.status

    @grpc_errors
    async def ListStalePools(
        self, request: admin_pb2.ListStalePoolsRequest, context: Context
    ) -> admin_pb2.ListStalePoolsResponse:
        async def act(_: str) -> tuple[admin_pb2.ListStalePoolsResponse, Detail]:
            ask = wallet_pb2.ListOpenPoolsRequest(
                older_than_s=request.older_than_s or 86400, limit=_limit(request.limit)
            )
            reply = await remote_call(
                self.wallet.ListOpenPools(ask, metadata=self.wallet_auth, timeout=10)
            )
            found = [
                admin_pb2.StalePool(
                    pool=p, tournament_status=await self._tournament_status(p.tournament_id)
                )
                for p in reply.pools
            ]
            orphaned = sum(1 for p in found if not p.tournament_status)
            listed = admin_pb2.ListStalePoolsResponse(pools=found)
            return listed, {"found": len(found), "orphaned": orphaned}

        return await self._audited(context, request, "stale_pools", "", act)

    @grpc_errors
    async def RefundOrphanPool(
        self, request: admin_pb2.RefundOrphanPoolRequest, context: Context
    ) -> wallet_pb2.OperationResponse:
        """A pool whose tournament is gone (its document lost) has no director to settle it: the
        operator gives every buy-in back, under the key the director's refund would use, so the
        two can never both pay."""

        async def act(_: str) -> tuple[wallet_pb2.OperationResponse, Detail]:
            forwarded_bounds.reason(request.reason)
            status = await self._tournament_status(request.tournament_id)
            if status:
                raise ServiceError(
                    "TOURNAMENT_KNOWN",
                    f"the tournament is {status}: cancel it and its director refunds the pool",
                    field="tournament_id",
                    tournament_status=status,
                )
            refund = wallet_pb2.RefundPoolRequest(
                idempotency_key=money_keys.pool_refund(request.tournament_id),
                tournament_id=request.tournament_id,
            )
            done = await remote_call(self.wallet.RefundPool(refund, timeout=10))
            return done, {"operation_id": done.operation_id, "replayed": done.replayed}

        return await self._audited(context, request, "pool_refund", "tournament_id", act)

    @grpc_errors
    async def ListStaleEscrows(
        self, request: admin_pb2.ListStaleEscrowsRequest, context: Context
    ) -> wallet_pb2.ListOpenEscrowsResponse:
        async def act(_: str) -> tuple[wallet_pb2.ListOpenEscrowsResponse, Detail]:
            ask = wallet_pb2.ListOpenEscrowsRequest(
                older_than_s=request.older_than_s or 600, limit=request.limit
            )
            reply = await remote_call(
                self.wallet.ListOpenEscrows(ask, metadata=self.wallet_auth, timeout=10)
            )
            return reply, {"found": len(reply.escrows), "older_than_s": ask.older_than_s}

        return await self._audited(context, request, "stale_escrows", "", act)

    @grpc_errors
    async def ReplayPlayer(
        self, request: admin_pb2.ReplayPlayerRequest, context: Context
    ) -> leaderboard_pb2.ReplayPlayerResponse:
        player = request.player_id

        async def act(_: str) -> tuple[leaderboard_pb2.ReplayPlayerResponse, Detail]:
            forwarded_bounds.reason(request.reason)
            ask = leaderboard_pb2.ReplayPlayerRequest(player_id=player)
            reply = await remote_call(self.boards.ReplayPlayer(ask, timeout=120))
            detail: Detail = {"events": reply.events, "applied": reply.applied}
            return reply, detail

        return await self._audited(context, request, "replay", "player_id", act)

    @grpc_errors
    async def ListAudit(
        self, request: admin_pb2.ListAuditRequest, context: Context
    ) -> admin_pb2.ListAuditResponse:
        limit = _limit(request.limit)

        async def act(_: str) -> tuple[admin_pb2.ListAuditResponse, Detail]:
            rows = await self.audit.entries(limit, request.target)
            entries = [
                admin_pb2.AuditEntry(
                    id=r.id,
                    at_ms=r.at_ms,
                    operator=r.operator,
                    action=r.action,
                    target=r.target,
                    reason=r.reason,
                    outcome=r.outcome,
                    detail=r.detail,
                )
                for r in rows
            ]
            return admin_pb2.ListAuditResponse(entries=entries), {
                "limit": limit,
                "target": request.target,
            }

        # Reading the log is audited too, under no target: a read never lists itself.
        return await self._audited(context, request, "audit", "", act)

    # -- chat moderation (services/identity/chat_moderation.py) -------------------------------

    @grpc_errors
    async def ListChatReports(
        self, request: admin_pb2.ListChatReportsRequest, context: Context
    ) -> admin_pb2.ListChatReportsResponse:
        limit = _limit(request.limit)

        async def act(_: str) -> tuple[admin_pb2.ListChatReportsResponse, Detail]:
            reports = await self.chat.reports(limit)
            return admin_pb2.ListChatReportsResponse(reports=reports), {"count": len(reports)}

        return await self._audited(context, request, "chat_reports", "", act)

    @grpc_errors
    async def ResolveChatReport(
        self, request: admin_pb2.ResolveChatReportRequest, context: Context
    ) -> admin_pb2.ResolveChatReportResponse:
        async def act(_: str) -> tuple[admin_pb2.ResolveChatReportResponse, Detail]:
            forwarded_bounds.reason(request.reason)
            was = await self.chat.resolve(request.report_id)
            return admin_pb2.ResolveChatReportResponse(was_waiting=was), {"was_waiting": was}

        return await self._audited(context, request, "chat_resolve", "report_id", act)

    @grpc_errors
    async def RemoveChatMessage(
        self, request: admin_pb2.RemoveChatMessageRequest, context: Context
    ) -> admin_pb2.RemoveChatMessageResponse:
        async def act(_: str) -> tuple[admin_pb2.RemoveChatMessageResponse, Detail]:
            forwarded_bounds.reason(request.reason)
            table_id = _target(request.table_id, "table_id")
            removed = await self.chat.remove(table_id, request.message_id)
            return admin_pb2.RemoveChatMessageResponse(removed=removed), {
                "table_id": table_id,
                "removed": removed,
            }

        return await self._audited(context, request, "chat_remove", "message_id", act)

    @grpc_errors
    async def SilenceChatPlayer(
        self, request: admin_pb2.SilenceChatPlayerRequest, context: Context
    ) -> admin_pb2.SilenceChatPlayerResponse:
        async def act(_: str) -> tuple[admin_pb2.SilenceChatPlayerResponse, Detail]:
            forwarded_bounds.reason(request.reason)
            until = await self.chat.silence(request.player_id, request.seconds)
            return admin_pb2.SilenceChatPlayerResponse(until_ms=until), {"seconds": request.seconds}

        return await self._audited(context, request, "chat_silence", "player_id", act)
