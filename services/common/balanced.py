"""Channels to replicated services through gRPC's own name resolution and load balancing.

A replicated peer is one channel, not a hand-made list of stubs: the target names every replica
(`dns:///table-headless:50061` in Kubernetes, where a headless Service answers with one address
per pod; `ipv4:127.0.0.1:50061,127.0.0.1:50062` locally), the `round_robin` policy spreads calls
over the live ones, and the service config retries a call that failed UNAVAILABLE (the replica
died or is draining) on another. Every call to the services reached this way is idempotent:
reads, and writes keyed by a command, match or idempotency id. Keepalive pings find a dead peer
on an idle connection within seconds instead of at the next call's timeout.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from typing import Any

import grpc

from services.common.peer import Peer

KEEPALIVE_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
# gRPC backs off reconnecting to a dead peer up to 120 s by default, so a replica that came back
# would be refused calls (fast, UNAVAILABLE) for up to two minutes; a second is the cap here.
RECONNECT_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.min_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 1_000),
]
# What a server must allow for its clients' keepalives (else it answers too_many_pings).
SERVER_KEEPALIVE_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ("grpc.http2.max_ping_strikes", 0),
]


def target(addresses: Sequence[str]) -> str:
    """One gRPC target naming every replica. A target with a scheme is kept as it is; a list of
    IP:port becomes an `ipv4:`/`ipv6:` target; a single host:port resolves through DNS (every
    address it has)."""
    addresses = [a.strip() for a in addresses if a.strip()]
    if not addresses:
        raise ValueError("no address")
    if len(addresses) == 1 and ":///" in addresses[0]:
        return addresses[0]
    hosts = [a.rsplit(":", 1)[0].strip("[]") for a in addresses]
    try:
        versions = {ipaddress.ip_address(h).version for h in hosts}
    except ValueError:
        if len(addresses) > 1:
            raise ValueError(
                f"several replicas must be IP:port (or one dns:/// name): {addresses}"
            ) from None
        return f"dns:///{addresses[0]}"
    if len(versions) > 1:
        raise ValueError(f"mixed IPv4 and IPv6 replicas: {addresses}")
    return ("ipv4:" if versions == {4} else "ipv6:") + ",".join(addresses)


def service_config(services: str | Sequence[str], attempts: int = 4) -> str:
    """round_robin, and UNAVAILABLE retried on the next replica (every method of each of
    `services`)."""
    names = [services] if isinstance(services, str) else list(services)
    return json.dumps(
        {
            "loadBalancingConfig": [{"round_robin": {}}],
            "methodConfig": [
                {
                    "name": [{"service": name} for name in names],
                    "retryPolicy": {
                        "maxAttempts": attempts,
                        "initialBackoff": "0.05s",
                        "maxBackoff": "1s",
                        "backoffMultiplier": 2,
                        "retryableStatusCodes": ["UNAVAILABLE"],
                    },
                }
            ],
        }
    )


def balanced_channel(
    addresses: Sequence[str],
    services: str | Sequence[str],
    interceptors: Sequence[Any] | None = None,
) -> grpc.aio.Channel:
    """A channel to every replica of `services` (full proto names: bg.table.v1.TableService)."""
    options = [
        ("grpc.service_config", service_config(services)),
        ("grpc.enable_retries", 1),
        *KEEPALIVE_OPTIONS,
        *RECONNECT_OPTIONS,
    ]
    return grpc.aio.insecure_channel(
        target(addresses), options=options, interceptors=list(interceptors or [])
    )


def addresses_of(setting_value: str | Sequence[str]) -> list[str]:
    """A replica list from a setting: "a:1,b:2" or a sequence of addresses."""
    items = setting_value.split(",") if isinstance(setting_value, str) else setting_value
    return [a.strip() for a in items if a.strip()]


def channel_to(
    peer: Peer, addresses: str | Sequence[str], interceptors: Sequence[Any] | None = None
) -> grpc.aio.Channel:
    """The balanced channel to every replica of `peer` (services/contracts/peers.py), its
    UNAVAILABLE calls retried."""
    services = (peer.service, *peer.also)
    return balanced_channel(addresses_of(addresses), services, interceptors)
