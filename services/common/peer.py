"""A service other services call, as the platform needs to know it: its gRPC service's full name
(the retry policy's scope) and the setting that lists its replicas. The platform knows no service
by name; the table of them is services/contracts/peers.py."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Peer:
    service: str  # the gRPC service's full proto name: bg.wallet.v1.WalletService
    env: str  # the setting that lists its replicas: BG_WALLET_ADDR
    default: str | tuple[str, ...]  # a tuple: the setting is a list
    help: str
    # Other gRPC services the same replicas serve: one channel, the same balancing and retries.
    also: tuple[str, ...] = ()
