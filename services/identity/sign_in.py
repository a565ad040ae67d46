"""What signing in does to an account beyond its session: a new account's starter diamonds,
granted once at its first login (best effort: with the wallet away the login still works, and
the next login asks again; never for a banned player), and an account's closing, the wallet's
side first. The gateway signs the access token; this is the account's side."""

from __future__ import annotations

import dataclasses
import logging

from bg.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from services.common.errors import NotFound, remote_call
from services.contracts.seats import ACCOUNT_PREFIX
from services.identity.ports import AccountsRepository, Session

log = logging.getLogger("bg.identity.sign_in")
GRANT_TIMEOUT_S = 5.0  # a login waits this long at most for the wallet's grant


class AccountLifecycle:
    def __init__(
        self, accounts: AccountsRepository, wallet: wallet_pb2_grpc.WalletServiceAsyncStub
    ) -> None:
        self.accounts = accounts
        self.wallet = wallet

    async def signed_in(self, session: Session) -> Session:
        """The session once the account's starter grant is credited (or postponed)."""
        player = session.account.player_id
        if session.granted or await self.accounts.is_banned(player):
            return session
        try:
            ask = wallet_pb2.GrantStarterRequest(player_id=player)
            await remote_call(self.wallet.GrantStarter(ask, timeout=GRANT_TIMEOUT_S))
            await self.accounts.granted(player)
        except Exception as exc:  # best effort: the login goes on, the next one asks again
            log.warning("starter grant postponed", extra={"error": repr(exc)[:200]})
            return session
        return dataclasses.replace(session, granted=True)

    async def close(self, player: str) -> None:
        """The wallet first: with stakes in play nothing changes; a retry after a failure in
        between finds the wallet's close done (idempotent) and finishes the rest."""
        if not player.startswith(ACCOUNT_PREFIX):
            raise NotFound("NO_ACCOUNT", "guests have no account to delete")
        close = wallet_pb2.CloseAccountRequest(idempotency_key=f"close:{player}", player_id=player)
        await remote_call(self.wallet.CloseAccount(close, timeout=10))
        await self.accounts.delete(player)
