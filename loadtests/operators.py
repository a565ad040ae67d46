"""A load test's business with the operators' API (bg.admin.v1.AdminService), the one way it
may touch a deployment's money: its players are funded with `Adjust` (audited, the run's id in
the ledger's reason, once per player by an idempotency key) and, after the run, looked up to
say where the diamonds ended. The operator's key comes from the environment (OPERATOR_KEY_ENV),
never from the command line.

Before anything is funded the runner checks what it was given (`check_gateway`, `sign_in`), so a
target that refuses connections, a certificate for another name, a wrong key or an operator
that may not adjust stops the run with one line and nothing granted (`Refused`)."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bg.admin.v1 import admin_pb2, admin_pb2_grpc
from bg.matchmaking.v1 import matchmaking_pb2
from bg.table.v1 import table_pb2
from loadtests.endpoints import Endpoint
from wire.errors import error_from

OPERATOR_KEY_ENV = "BG_LOAD_OPERATOR_KEY"


class Refused(Exception):
    """The run cannot start: one line saying why (nothing was funded)."""


def _why(exc: grpc.aio.AioRpcError) -> str:
    detail = error_from(exc)
    said = detail.message if detail else exc.details()
    return f"{exc.code().name}{' ' + detail.code if detail else ''}: {said}"[:300]


async def check_gateway(gateway: Endpoint) -> None:
    """The gateway answers its health service over the connection the players will use (the
    TLS handshake and the name included)."""
    async with gateway.aio_channel() as channel:
        try:
            await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=10
            )
        except grpc.aio.AioRpcError as exc:
            raise Refused(
                f"the gateway at {gateway.described()} did not answer: {_why(exc)}"
            ) from None


async def open_tournaments(admin: Endpoint, token: str, run_id: str, count: int) -> list[str]:
    """Casual four-player sit-and-gos for the run's people to join (loadtests/human.py): their
    ids, or none when the operator may not create tournaments (said, not fatal)."""
    made: list[str] = []
    async with admin.aio_channel() as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        for n in range(count):
            request = matchmaking_pb2.CreateTournamentRequest(
                name=f"Load test {run_id} #{n + 1}",
                kind="sit_and_go",
                size=4,
                options=table_pb2.TableOptions(profile="casual", match_length=1),
                request_id=f"load:{run_id}:{n}",
            )
            try:
                found = await stub.CreateTournament(
                    request, metadata=[("authorization", f"Bearer {token}")], timeout=30
                )
            except grpc.aio.AioRpcError as exc:
                print(f"loadtests.run: no tournaments: {_why(exc)}", file=sys.stderr)
                return made
            made.append(str(found.tournament_id))
    return made


async def sign_in(admin: Endpoint, name: str, key: str) -> str:
    """An operator's token that may fund players (Refused otherwise: a wrong name or key, an
    operator without the right to adjust)."""
    if not key:
        raise Refused(f"set the operator's key in {OPERATOR_KEY_ENV} (never on the command line)")
    async with admin.aio_channel() as channel:
        try:
            login = await admin_pb2_grpc.AdminServiceStub(channel).OperatorLogin(
                admin_pb2.OperatorLoginRequest(name=name, key=key), timeout=10
            )
        except grpc.aio.AioRpcError as exc:
            raise Refused(
                f"the operators' API at {admin.described()} refused operator {name}: {_why(exc)}"
            ) from None
    if "adjust" not in login.rights:
        raise Refused(
            f"operator {name} may not adjust balances (its rights: {', '.join(login.rights)}): "
            "a load test funds its players with Adjust"
        )
    return str(login.token)


async def where_they_ended(admin: Endpoint, token: str, granted: dict[str, int]) -> dict[str, Any]:
    """The diamonds granted to the run's players, and where they are now: in the players'
    balances, and the rest (stakes of matches still open, the house's fees and boosts)."""
    balances: dict[str, int] = {}
    lines: list[Any] = []
    auth = [("authorization", f"Bearer {token}")]
    async with admin.aio_channel() as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        for player_id in granted:
            record = await stub.LookupPlayer(
                admin_pb2.LookupPlayerRequest(player_id=player_id), metadata=auth, timeout=30
            )
            balances[player_id] = int(record.balance)
            lines += record.ledger
    total, kept, held = sum(granted.values()), sum(balances.values()), _staked(lines)
    return {
        "players_funded": len(granted),
        "granted": total,
        "in_players_balances": kept,
        "staked_in_open_matches": held,
        "to_the_house": total - kept - held,  # fees, boosts
    }


def _staked(lines: list[Any]) -> int:
    """What the players' newest ledger lines show staked in matches no line shows closed (a
    match's settlement credits its winner only: a loser's escrow line stays alone)."""
    closed = {line.match_id for line in lines if line.kind in ("settle", "refund")}
    return -sum(int(line.amount) for line in lines if line.match_id and line.match_id not in closed)


class Funder:
    """Funds players from one Locust process: one operator sign-in (renewed before it lapses),
    one `Adjust` per player, recorded with the run's id."""

    def __init__(self, admin: Endpoint, name: str, key: str, run_id: str, amount: int) -> None:
        self.admin, self.name, self.key = admin, name, key
        self.run_id, self.amount = run_id, amount
        self._stub = admin_pb2_grpc.AdminServiceStub(admin.channel())
        self._token, self._until = "", 0.0
        self._lock = threading.Lock()

    def _auth(self) -> tuple[tuple[str, str | bytes], ...]:
        with self._lock:
            if time.time() > self._until:
                login = self._stub.OperatorLogin(
                    admin_pb2.OperatorLoginRequest(name=self.name, key=self.key), timeout=30
                )
                self._token, self._until = login.token, login.expires_ms / 1000 - 60
        return (("authorization", f"Bearer {self._token}"),)

    def fund(self, player_id: str) -> int:
        self._stub.Adjust(
            admin_pb2.AdjustRequest(
                player_id=player_id,
                amount=self.amount,
                reason=f"load test {self.run_id}",
                idempotency_key=f"load:{self.run_id}:{player_id}",
            ),
            metadata=self._auth(),
            timeout=30,
        )
        return self.amount


def run_id() -> str:
    return time.strftime("%m%d%H%M") + uuid.uuid4().hex[:4]
