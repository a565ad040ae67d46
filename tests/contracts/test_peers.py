"""The topology's table (services/contracts/peers.py): each peer names a real gRPC service, and
its setting reads a replica list as before."""

from __future__ import annotations

import json

from google.protobuf import descriptor_pool

from bg.analysis.v1 import analysis_pb2
from bg.identity.v1 import identity_pb2
from bg.leaderboard.v1 import leaderboard_pb2
from bg.matchmaking.v1 import matchmaking_pb2
from bg.social.v1 import social_pb2
from bg.table.v1 import table_pb2
from bg.wallet.v1 import wallet_pb2
from services.common.balanced import addresses_of, service_config
from services.contracts import peers
from services.gateway.settings import load_settings


def test_every_peer_names_a_service_its_protos_define() -> None:
    loaded = (
        analysis_pb2, identity_pb2, leaderboard_pb2, matchmaking_pb2, social_pb2, table_pb2,
        wallet_pb2,
    )  # fmt: skip
    assert all(m.DESCRIPTOR.services_by_name for m in loaded)
    pool = descriptor_pool.Default()
    for peer in peers.PEERS:
        for service in (peer.service, *peer.also):
            assert pool.FindServiceByName(service).full_name == service
    assert len({p.env for p in peers.PEERS}) == len(peers.PEERS)


def test_a_peers_setting_reads_its_replicas() -> None:
    settings = load_settings({"BG_TABLE_ADDRS": "10.0.0.1:1,10.0.0.2:1"})
    assert addresses_of(settings.table_addrs) == ["10.0.0.1:1", "10.0.0.2:1"]
    assert settings.wallet_addr == peers.WALLET.default


def test_a_peers_other_services_are_retried_as_its_own() -> None:
    """Chat and friends share the identity replicas' channel: their UNAVAILABLE is retried too
    (a call just after the replicas came back failed once, without it)."""
    config = json.loads(service_config((peers.IDENTITY.service, *peers.IDENTITY.also)))
    names = [n["service"] for n in config["methodConfig"][0]["name"]]
    assert names == ["bg.identity.v1.IdentityService", "bg.social.v1.SocialService"]
