"""The gRPC servicer of bg.gateway.v1.GatewayService: authenticate, then call the services.

Every call but Login carries `authorization: Bearer <token>`; the player id always comes from
the verified token, never from the request, so a player can act only for themselves (and the
table service checks the seat belongs to them).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any, cast

import grpc
from google.protobuf.message import Message
from redis.exceptions import RedisError

from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from bg.leaderboard.v1 import leaderboard_pb2, leaderboard_pb2_grpc
from bg.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from bg.table.v1 import table_pb2, table_pb2_grpc
from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common.errors import (
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServiceError,
    Unauthenticated,
    abort,
    grpc_errors,
    infrastructure_failure,
    remote_call,
)
from services.contracts.seats import computer_name, computer_table
from services.contracts.vocabulary import FINISHED
from services.gateway import limits, match_export
from services.gateway.accounts import ACCOUNT_PREFIX, Accounts, Session
from services.gateway.auth import Identity, IdentityProvider, TokenSigner
from services.gateway.bans import Bans
from services.gateway.command_lines import CommandLines
from services.gateway.feed import Answer, Subscription, TableFeed
from services.gateway.live_streams import LiveStreams
from services.gateway.names import Names
from services.gateway.presence import Presence
from services.gateway.privacy import Privacy
from services.gateway.rate_limits import RateLimits, peer_address
from services.gateway.seat_relay import END, play_update, relay_updates
from services.gateway.spectator_views import SpectatorViews

call = remote_call

log = logging.getLogger("bg.gateway")
Context = grpc.aio.ServicerContext[Any, Any]


class GatewayServicer(gateway_pb2_grpc.GatewayServiceServicer):
    def __init__(
        self,
        signer: TokenSigner,
        identities: IdentityProvider,
        matchmaking: grpc.aio.Channel,
        wallet: grpc.aio.Channel,
        tables: grpc.aio.Channel,
        presence: Presence,
        limits: RateLimits,
        leaderboard: grpc.aio.Channel,
        feed: TableFeed,
        names: Names,
        privacy: Privacy,
        lines: CommandLines,
        accounts: Accounts | None = None,
        access_ttl_s: int = 900,
        bots_secret: str = "",
        bans: Bans | None = None,
        streams: LiveStreams | None = None,
    ) -> None:
        self.signer = signer
        self.bans = bans
        # Each player's live Play streams on this gateway: a ban ends them.
        self.streams = streams if streams is not None else LiveStreams()
        self.identities = identities
        self.lobby = matchmaking_pb2_grpc.MatchmakingServiceStub(matchmaking)
        self.wallet = wallet_pb2_grpc.WalletServiceStub(wallet)
        # One balanced channel to every table replica (services/common/balanced.py).
        self.tables = table_pb2_grpc.TableServiceStub(tables)
        self.lines = lines  # commands to the tables' owners (services/gateway/command_lines.py)
        self.presence = presence
        self.feed = feed
        self.names = names
        self.accounts = accounts
        self.privacy = privacy
        self.access_ttl_s = access_ttl_s  # accounts' tokens; guests' live signer.ttl_s
        self.bots_secret = bots_secret
        self.spectators = SpectatorViews(self._spectator_view)
        self.limits = limits
        self.boards = leaderboard_pb2_grpc.LeaderboardServiceStub(leaderboard)
        self._background: set[asyncio.Task[None]] = set()

    def _limit(self, context: Context) -> None:
        """The caller's address, over every gateway (a flood guard: many players may share one
        address behind a NAT or proxy, so its limit is far above a player's)."""
        peer = context.peer() if hasattr(context, "peer") else "local"
        self.limits.check_peer(peer_address(peer))

    def player(self, context: Context, request: Message | None = None) -> str:
        """The caller's player id from the verified token, within the player's rate limit over
        every gateway; `request`'s strings bounded."""
        self._limit(context)
        if request is not None:
            limits.check(request)
        metadata = dict(context.invocation_metadata() or ())
        header = str(metadata.get("authorization", ""))
        if not header.startswith("Bearer "):
            raise Unauthenticated("NO_TOKEN", "send authorization: Bearer <token>")
        player_id = self.signer.verify(header.removeprefix("Bearer ")).player_id
        self._refuse_banned(player_id)  # a ban stops a token at once, however long it has left
        self.limits.check_player(player_id)
        return player_id

    # -- session and lobby -------------------------------------------------------------------

    @grpc_errors
    async def Login(
        self, request: gateway_pb2.LoginRequest, context: Context
    ) -> gateway_pb2.LoginResponse:
        self._limit(context)
        limits.check(request)
        if request.device_id:
            device = hashlib.sha256(request.device_id.encode()).hexdigest()[:24]
            self.limits.check_login(f"device:{device}")
            session = await self._accounts().device_login(request.device_id, request.display_name)
            self._refuse_banned(session.identity.player_id)
            await self._starter_grant(session)
            return self._logged_in(session)
        if request.email:
            self.limits.check_login("email:" + request.email.strip().casefold())
            session = await self._accounts().email_login(request.email, request.password)
            self._refuse_banned(session.identity.player_id)
            await self._starter_grant(session)
            return self._logged_in(session)
        identity = await self.identities.guest(request.guest_name)
        token, expires = self.signer.issue(identity)
        await self.names.remember(identity.player_id, identity.name)
        return gateway_pb2.LoginResponse(
            token=token, player_id=identity.player_id, expires_ms=expires,
            display_name=identity.name,
        )  # fmt: skip

    async def _starter_grant(self, session: Session) -> None:
        """A new account's diamonds (the wallet credits them once per player). Best effort:
        with the wallet down the login still works, and the next login asks again."""
        if session.granted or self.accounts is None:
            return
        player = session.identity.player_id
        try:
            await call(
                self.wallet.GrantStarter(
                    wallet_pb2.GrantStarterRequest(player_id=player), timeout=5
                )
            )
            await self.accounts.granted(player)
        except Exception as exc:
            log.warning("starter grant postponed", extra={"error": repr(exc)[:200]})

    @grpc_errors
    async def ServiceLogin(
        self, request: gateway_pb2.ServiceLoginRequest, context: Context
    ) -> gateway_pb2.LoginResponse:
        """The bots worker's login, scoped to computer seats that a table has: its credential
        cannot act for a person, and it never holds the token-signing key."""
        self._limit(context)
        limits.check(request)
        given = str(dict(context.invocation_metadata() or ()).get("x-service-credential", ""))
        if not self.bots_secret or not hmac.compare_digest(given, self.bots_secret):
            raise PermissionDenied("SERVICE_ONLY", "a service credential is needed")
        seat = request.player_id
        table_id = computer_table(seat)
        if table_id is None:
            raise PermissionDenied(
                "CPU_SEATS_ONLY", "a service signs in only as a computer seat", field="player_id"
            )
        table = matchmaking_pb2.TableRequest(player_id=seat, table_id=table_id)
        lobby = await call(self.lobby.GetTable(table, timeout=10))
        if seat not in lobby.player_ids:
            raise PermissionDenied(
                "NOT_A_SEAT", "no table has this computer seat", field="player_id"
            )
        name = computer_name(seat)
        token, expires = self.signer.issue(Identity(seat, name))
        return gateway_pb2.LoginResponse(
            token=token, player_id=seat, expires_ms=expires, display_name=name
        )

    def _accounts(self) -> Accounts:
        if self.accounts is None:
            raise ServiceError("NO_ACCOUNTS", "this gateway has no accounts (guests only)")
        return self.accounts

    def _refuse_banned(self, player_id: str) -> None:
        if self.bans is not None and self.bans.banned(player_id):
            raise PermissionDenied("BANNED", "this player is banned")

    def _logged_in(self, session: Session) -> gateway_pb2.LoginResponse:
        self._refuse_banned(session.identity.player_id)
        # Issued as of the session's making: a refresh retried within its race window gets the
        # very same pair, access token included.
        issued = session.issued_ms / 1000 if session.issued_ms else None
        token, expires = self.signer.issue(session.identity, now=issued, ttl_s=self.access_ttl_s)
        return gateway_pb2.LoginResponse(
            token=token,
            player_id=session.identity.player_id,
            expires_ms=expires,
            refresh_token=session.refresh_token,
            refresh_expires_ms=session.refresh_expires_ms,
            display_name=session.identity.name,
        )

    @grpc_errors
    async def Refresh(
        self, request: gateway_pb2.RefreshRequest, context: Context
    ) -> gateway_pb2.LoginResponse:
        self._limit(context)
        limits.check(request)
        return self._logged_in(await self._accounts().refresh(request.refresh_token))

    @grpc_errors
    async def Logout(
        self, request: gateway_pb2.LogoutRequest, context: Context
    ) -> gateway_pb2.LogoutResponse:
        self._limit(context)
        limits.check(request)
        await self._accounts().logout(request.refresh_token)
        return gateway_pb2.LogoutResponse()

    @grpc_errors
    async def DeleteAccount(
        self, request: gateway_pb2.DeleteAccountRequest, context: Context
    ) -> gateway_pb2.DeleteAccountResponse:
        """The wallet first: with stakes in play nothing changes; a retry after a failure in
        between finds the wallet's close done (idempotent) and finishes the rest."""
        player = self.player(context, request)
        accounts = self._accounts()
        if not player.startswith(ACCOUNT_PREFIX):
            raise NotFound("NO_ACCOUNT", "guests have no account to delete")
        close = wallet_pb2.CloseAccountRequest(idempotency_key=f"close:{player}", player_id=player)
        await call(self.wallet.CloseAccount(close, timeout=10))
        await accounts.delete(player)
        return gateway_pb2.DeleteAccountResponse()

    @grpc_errors
    async def LinkEmail(
        self, request: gateway_pb2.LinkEmailRequest, context: Context
    ) -> gateway_pb2.LinkEmailResponse:
        player = self.player(context, request)
        await self._accounts().link_email(player, request.email, request.password)
        return gateway_pb2.LinkEmailResponse()

    @grpc_errors
    async def SetDisplayName(
        self, request: gateway_pb2.SetDisplayNameRequest, context: Context
    ) -> gateway_pb2.LoginResponse:
        player = self.player(context, request)
        identity = await self._accounts().set_name(player, request.display_name)
        token, expires = self.signer.issue(identity, ttl_s=self.access_ttl_s)
        return gateway_pb2.LoginResponse(
            token=token, player_id=player, expires_ms=expires, display_name=identity.name
        )

    @grpc_errors
    async def CreateTable(
        self, request: matchmaking_pb2.CreateTableRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.player(context, request)
        _retry_safe(request)
        return await self._shown(await call(self.lobby.CreateTable(request, timeout=10)))

    @grpc_errors
    async def ListTables(
        self, request: matchmaking_pb2.ListTablesRequest, context: Context
    ) -> matchmaking_pb2.ListTablesResponse:
        self.player(context, request)
        reply = await call(self.lobby.ListTables(request, timeout=10))
        for table in reply.tables:
            await self._shown(table)
        if request.live:  # matches still in play (the lobby cannot tell), none kept private
            playing = await asyncio.gather(*(self._watchable(t) for t in reply.tables))
            kept = [t for t, ok in zip(reply.tables, playing, strict=True) if ok]
            reply = matchmaking_pb2.ListTablesResponse(tables=kept)
        return reply

    async def _shown(self, table: matchmaking_pb2.LobbyTable) -> matchmaking_pb2.LobbyTable:
        """A table as a client sees it: the lobby does not know players' privacy (the gateway
        keeps it), so a table one of whose players hides from spectators is not watchable,
        as Watch and the live list already treat it."""
        if table.watchable and await self.privacy.any_hidden(list(table.player_ids)):
            table.watchable = False
        return table

    async def _watchable(self, table: matchmaking_pb2.LobbyTable) -> bool:
        if await self.privacy.any_hidden(list(table.player_ids)):
            return False
        request = table_pb2.GetViewRequest(table_id=table.table_id, spectator=True)
        try:
            view = await call(self.tables.GetView(request, timeout=5))
        except ServiceError:
            return False  # gone (forgotten an hour after its end) or unreachable: not listed
        return view.phase not in FINISHED

    @grpc_errors
    async def JoinByCode(
        self, request: matchmaking_pb2.JoinByCodeRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.player(context, request)
        _retry_safe(request)
        return await self._shown(await call(self.lobby.JoinByCode(request, timeout=10)))

    @grpc_errors
    async def QuickMatch(
        self, request: matchmaking_pb2.QuickMatchRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.player(context, request)
        _retry_safe(request)
        return await self._shown(await call(self.lobby.QuickMatch(request, timeout=10)))

    @grpc_errors
    async def StartTable(
        self, request: matchmaking_pb2.TableRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.player(context, request)
        return await self._shown(await call(self.lobby.StartTable(request, timeout=10)))

    @grpc_errors
    async def LeaveTable(
        self, request: matchmaking_pb2.TableRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.player(context, request)
        return await self._shown(await call(self.lobby.LeaveTable(request, timeout=10)))

    @grpc_errors
    async def GetTable(
        self, request: matchmaking_pb2.TableRequest, context: Context
    ) -> matchmaking_pb2.LobbyTable:
        request.player_id = self.player(context, request)
        return await self._shown(await call(self.lobby.GetTable(request, timeout=10)))

    @grpc_errors
    async def GetView(
        self, request: gateway_pb2.ViewRequest, context: Context
    ) -> table_pb2.TableView:
        player = self.player(context, request)
        view = table_pb2.GetViewRequest(table_id=request.table_id, player_id=player)
        return await call(self.tables.GetView(view, timeout=10))

    @grpc_errors
    async def GetMatchRecord(
        self, request: table_pb2.GetMatchRecordRequest, context: Context
    ) -> table_pb2.MatchRecord:
        player = self.player(context, request)
        record = await call(self.tables.GetMatchRecord(request, timeout=10))
        if player not in record.player_ids:
            raise PermissionDenied("NOT_SEATED", "only the match's players get its record")
        return record

    @grpc_errors
    async def GetLeaderboard(
        self, request: leaderboard_pb2.TopRequest, context: Context
    ) -> leaderboard_pb2.TopResponse:
        self.player(context, request)
        return await call(self.boards.Top(request, timeout=10))

    @grpc_errors
    async def GetRank(
        self, request: leaderboard_pb2.RankRequest, context: Context
    ) -> leaderboard_pb2.RankResponse:
        player = self.player(context, request)
        request.player_id = request.player_id or player
        return await call(self.boards.Rank(request, timeout=10))

    @grpc_errors
    async def GetProfile(
        self, request: leaderboard_pb2.ProfileRequest, context: Context
    ) -> leaderboard_pb2.ProfileResponse:
        player = self.player(context, request)
        request.player_id = request.player_id or player
        return await call(self.boards.Profile(request, timeout=10))

    @grpc_errors
    async def GetMatchHistory(
        self, request: leaderboard_pb2.HistoryRequest, context: Context
    ) -> leaderboard_pb2.HistoryResponse:
        request.player_id = self.player(context, request)  # your own history only
        return await call(self.boards.History(request, timeout=10))

    @grpc_errors
    async def GetArchivedMatch(
        self, request: leaderboard_pb2.ArchivedMatchRequest, context: Context
    ) -> leaderboard_pb2.ArchivedMatchResponse:
        request.player_id = self.player(context, request)  # only a match you played
        return await call(self.boards.ArchivedMatch(request, timeout=10))

    @grpc_errors
    async def ExportMatch(
        self, request: gateway_pb2.ExportMatchRequest, context: Context
    ) -> gateway_pb2.ExportMatchResponse:
        player = self.player(context, request)
        if request.format not in ("mat", "json"):
            raise InvalidArgument("BAD_FORMAT", "format is mat or json", field="format")
        wanted = leaderboard_pb2.ArchivedMatchRequest(match_id=request.match_id, player_id=player)
        archived = await call(self.boards.ArchivedMatch(wanted, timeout=10))
        ids = list(archived.summary.player_ids)
        names = await self._display_names(ids)
        stem = f"match-{archived.summary.match_id}"
        if request.format == "json":
            return gateway_pb2.ExportMatchResponse(
                filename=stem + ".json",
                content_type="application/json",
                content=match_export.to_json(archived, names),
            )
        moves = list(archived.moves)
        return gateway_pb2.ExportMatchResponse(
            filename=stem + ".mat",
            content_type="text/plain",
            content=match_export.to_mat(
                moves,
                [match_export.mat_name(names.get(p) or p) for p in ids],
                match_export.match_length(moves),
            ),
        )

    @grpc_errors
    async def GetBalance(
        self, request: gateway_pb2.BalanceRequest, context: Context
    ) -> gateway_pb2.BalanceResponse:
        player = self.player(context, request)
        reply = await call(
            self.wallet.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player), timeout=10)
        )
        return gateway_pb2.BalanceResponse(balance=reply.balance)

    @grpc_errors
    async def GetNames(
        self, request: gateway_pb2.NamesRequest, context: Context
    ) -> gateway_pb2.NamesResponse:
        self.player(context, request)
        return gateway_pb2.NamesResponse(names=await self._display_names(list(request.player_ids)))

    async def _display_names(self, wanted: list[str]) -> dict[str, str]:
        """Guests' and computer seats' names from the directory, accounts' from SQL."""
        names = await self.names.lookup(wanted)  # Redis down: UNAVAILABLE
        members = [p for p in wanted if p.startswith(ACCOUNT_PREFIX) and p not in names]
        if members and self.accounts is not None:
            names.update(await self.accounts.names(members))
        return names

    @grpc_errors
    async def SetPrivacy(
        self, request: gateway_pb2.PrivacyRequest, context: Context
    ) -> gateway_pb2.PrivacyResponse:
        player = self.player(context, request)
        await self.privacy.set(player, request.hide_from_spectators)
        return gateway_pb2.PrivacyResponse()

    @grpc_errors
    async def SetPreferences(
        self, request: gateway_pb2.PreferencesRequest, context: Context
    ) -> gateway_pb2.PreferencesResponse:
        player = self.player(context, request)
        prefs = table_pb2.SetPreferencesRequest(player_id=player, auto_roll=request.auto_roll)
        await call(self.tables.SetPreferences(prefs, timeout=10))
        return gateway_pb2.PreferencesResponse()

    # -- the play stream ---------------------------------------------------------------------

    async def Play(  # type: ignore[override]  # grpc.aio: written to the context, not yielded
        self, request_iterator: AsyncIterator[gateway_pb2.PlayRequest], context: Context
    ) -> None:
        # Written with context.write(), not yielded: when the client goes away the handler task
        # is cancelled and the finally block (the presence report) runs at once, instead of
        # whenever an abandoned async generator happens to be collected.
        try:
            player = self.player(context)
            first = await anext(request_iterator)
            if first.WhichOneof("kind") != "join":
                raise InvalidArgument(
                    "JOIN_FIRST", "the first message names the table", field="join"
                )
            table_id = limits.table_id(first.join.table_id, "join.table_id")
        except ServiceError as err:
            await abort(context, err)
            return
        except StopAsyncIteration:
            return
        # Subscribe before reading the state, so no commit falls between the two.
        sub = await self.feed.subscribe(table_id)
        try:
            view = await call(
                self.tables.GetView(
                    table_pb2.GetViewRequest(table_id=table_id, player_id=player), timeout=10
                )
            )
            backlog = await self.feed.events_between(table_id, first.join.from_seq, view.seq)
        except (ServiceError, RedisError) as exc:
            await self.feed.unsubscribe(sub)
            await abort(context, infrastructure_failure(exc) or cast(ServiceError, exc))
            return
        seat = view.seat
        queue: asyncio.Queue[gateway_pb2.PlayUpdate | None] = asyncio.Queue(maxsize=1000)
        await queue.put(
            play_update(table_id, gateway_pb2.SeatUpdate(seq=view.seq, events=backlog, view=view))
        )
        stream = uuid.uuid4().hex
        self.streams.opened(player, queue)
        if await self.presence.opened(table_id, player, stream):
            await self._report(table_id, player, True)
        commands = asyncio.create_task(self._commands(request_iterator, sub, player, seat))
        pushes = asyncio.create_task(
            self._pushes(sub, player, seat, view.seq, queue, first.join.results_in_updates)
        )
        try:
            while True:
                update = await queue.get()
                if update is None:
                    return
                await context.write(update)
        finally:
            self.streams.closed(player, queue)
            for task in (commands, pushes):
                task.cancel()
            # The presence report runs in its own task: a second cancellation of this handler
            # (the call ending while we clean up) must not swallow the disconnect.
            left = asyncio.create_task(self._stream_closed(sub, player, stream, commands, pushes))
            self._background.add(left)
            left.add_done_callback(self._background.discard)

    async def _pushes(
        self,
        sub: Subscription,
        player: str,
        seat: int,
        last: int,
        queue: asyncio.Queue[gateway_pb2.PlayUpdate | None],
        combine: bool,
    ) -> None:
        """The table's updates for this seat, each event once and in order, gaps filled, and
        the answers to its commands."""
        table_id = sub.table_id

        async def fresh() -> table_pb2.TableView:
            request = table_pb2.GetViewRequest(table_id=table_id, player_id=player)
            return await call(self.tables.GetView(request, timeout=10))

        async def pushed(update: table_pb2.TableUpdate) -> table_pb2.TableView | None:
            return _view_of(update, player, seat)

        await relay_updates(self.feed, sub, last, queue, fresh, pushed, combine)

    # -- watching (I-35) ---------------------------------------------------------------------

    async def Watch(  # type: ignore[override]  # grpc.aio: written to the context, not yielded
        self, request: gateway_pb2.WatchRequest, context: Context
    ) -> None:
        """A read-only stream of a watchable table: the same events as the players get (the
        seed only in the match's end), with a spectator's view."""
        try:
            player = self.player(context, request)
            table_id = limits.table_id(request.table_id)
            lobby = await call(
                self.lobby.GetTable(
                    matchmaking_pb2.TableRequest(player_id=player, table_id=table_id), timeout=10
                )
            )
            seated = player in lobby.player_ids
            hidden = await self.privacy.any_hidden(list(lobby.player_ids))
            if not seated and (not lobby.watchable or hidden):
                raise PermissionDenied("NOT_WATCHABLE", "this table is not open to spectators")
        except ServiceError as err:
            await abort(context, err)
            return

        async def fresh() -> table_pb2.TableView:
            return await self._spectator_view(table_id)

        async def pushed(update: table_pb2.TableUpdate) -> table_pb2.TableView:
            # Seat 0's side at the turn's start is in neither seat's pushed view while seat 0
            # moves: one read per commit, shared by this gateway's watchers of the table.
            return await self.spectators.view(table_id, update.seq)

        self.spectators.watch(table_id)
        sub = await self.feed.subscribe(table_id)
        try:
            view = await fresh()
            backlog = await self.feed.events_between(table_id, request.from_seq, view.seq)
        except (ServiceError, RedisError) as exc:
            self.spectators.unwatch(table_id)
            await self.feed.unsubscribe(sub)
            await abort(context, infrastructure_failure(exc) or cast(ServiceError, exc))
            return
        queue: asyncio.Queue[gateway_pb2.PlayUpdate | None] = asyncio.Queue(maxsize=1000)
        await queue.put(
            play_update(table_id, gateway_pb2.SeatUpdate(seq=view.seq, events=backlog, view=view))
        )
        relay = asyncio.create_task(relay_updates(self.feed, sub, view.seq, queue, fresh, pushed))
        try:
            while (update := await queue.get()) is not None:
                await context.write(update)
        finally:
            relay.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await relay
            self.spectators.unwatch(table_id)
            await self.feed.unsubscribe(sub)

    async def _spectator_view(self, table_id: str) -> table_pb2.TableView:
        request = table_pb2.GetViewRequest(table_id=table_id, spectator=True)
        return await call(self.tables.GetView(request, timeout=10))

    async def _stream_closed(
        self, sub: Subscription, player: str, stream: str, *tasks: asyncio.Task[None]
    ) -> None:
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.feed.unsubscribe(sub)
        if await self.presence.closed(sub.table_id, player, stream):
            await self._report(sub.table_id, player, False)

    async def report_presence(self, table_id: str, player: str, connected: bool) -> None:
        """For the presence sweeper: a lease expired (or came back)."""
        await self._report(table_id, player, connected)

    async def _report(self, table_id: str, player: str, connected: bool) -> None:
        """Tell the table a player (dis)connected; retried while the table service restarts,
        since a lost disconnect would never start the away rule (I-8)."""
        request = table_pb2.SetPresenceRequest(
            table_id=table_id, player_id=player, connected=connected
        )
        for attempt in range(5):
            try:
                await call(self.tables.SetPresence(request, timeout=5))
                return
            except grpc.aio.UsageError:
                # The channel is closed: this gateway is stopping. The stream's presence lease
                # runs out and a live gateway's sweeper reports the disconnect instead.
                return
            except ServiceError as err:
                if err.status != grpc.StatusCode.UNAVAILABLE or attempt == 4:
                    log.warning(
                        "presence report lost", extra={"table_id": table_id, "code": err.code}
                    )
                    return
            await asyncio.sleep(1.0 + attempt)

    async def _commands(
        self,
        requests: AsyncIterator[gateway_pb2.PlayRequest],
        sub: Subscription,
        player: str,
        seat: int,
    ) -> None:
        """The stream's commands, one at a time, each answered through `sub` (in order with
        the table's updates, see services/gateway/seat_relay.py)."""
        table_id = sub.table_id
        request_no = 0  # the join was 0
        try:
            async for message in requests:
                cmd = message.command
                request_no += 1
                sub.answers_due += 1
                update: table_pb2.TableUpdate | None = None
                try:
                    if message.WhichOneof("kind") != "command":
                        raise InvalidArgument(
                            "MALFORMED", "after join, send commands", field="command"
                        )
                    command_id = limits.bounded(cmd.command_id, "command.command_id", 64)
                    self._refuse_banned(player)
                    self.limits.check_player(player)
                    request = table_pb2.SubmitCommandRequest(
                        table_id=table_id, player_id=player, seat=seat,
                        # an id makes the command safe to hand to another replica on failover
                        command_id=command_id or f"gw-{uuid.uuid4().hex}",
                        expected_seq=cmd.expected_seq, command=cmd.command,
                    )  # fmt: skip
                    reply = await self.lines.submit(request, timeout=10)
                    if reply.HasField("update"):
                        update = reply.update
                    if cmd.command.WhichOneof("kind") == "accept_rematch" and not reply.duplicate:
                        # I-32: both agreed; matchmaking deals the new match on this table.
                        rematch = matchmaking_pb2.TableRequest(player_id=player, table_id=table_id)
                        await call(self.lobby.Rematch(rematch, timeout=10))
                    result = gateway_pb2.CommandResult(
                        command_id=command_id, seq=reply.seq, duplicate=reply.duplicate,
                        request_no=request_no,
                    )  # fmt: skip
                    answer = gateway_pb2.PlayUpdate(result=result, table_id=table_id)
                except ServiceError as err:
                    # An id over its bound is never cut to fit: the cut could be another
                    # command's id. The client matches such an answer on request_no.
                    sent = cmd.command_id if len(cmd.command_id) <= 64 else ""
                    failed = gateway_pb2.CommandError(
                        command_id=sent, error=err.to_proto(), request_no=request_no,
                        status=err.status.name,
                    )  # fmt: skip
                    answer = gateway_pb2.PlayUpdate(error=failed, table_id=table_id)
                if update is not None:
                    self.feed.deliver_local(update, sub, answer)
                else:
                    sub.deliver(Answer(answer))
        finally:
            sub.answers_due += 1
            sub.deliver(Answer(END))


def _view_of(update: table_pb2.TableUpdate, player: str, seat: int) -> table_pb2.TableView | None:
    """The caller's own view: the one whose seat holds this player (the seat it joined with,
    unless a new match seated the players otherwise); None once they no longer sit there.
    Never another player's view."""
    view = update.views[seat]
    if view.player_ids[seat] == player:
        return view
    return next((v for v in update.views if v.player_ids[v.seat] == player), None)


def _retry_safe(
    request: matchmaking_pb2.CreateTableRequest
    | matchmaking_pb2.JoinByCodeRequest
    | matchmaking_pb2.QuickMatchRequest,
) -> None:
    """A request id for a call the client sent without one: the channel retries a call that
    failed UNAVAILABLE on another matchmaking replica, and with the id the retry answers the
    first call's table instead of opening or joining a second one."""
    if not request.request_id:
        request.request_id = f"gw-{uuid.uuid4().hex}"
