"""`bgcluster up`'s plan of instances (issue 14): replicas of any service get numbered names and
their own ports, one instance keeps its plain name and its documented port."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.cluster.runner import Cluster, ClusterConfig


def test_replicas_of_any_service_get_their_own_names_and_ports(tmp_path: Path) -> None:
    config = ClusterConfig(
        replicas={"table": 3, "gateway": 2, "wallet": 2, "leaderboard": 2},
        data_dir=tmp_path, base_port=50050,
    )  # fmt: skip
    plan = Cluster(config)._plan()
    names = [i.name for i in plan]
    assert names == [
        "gateway-1", "gateway-2", "matchmaking", "table-1", "table-2", "table-3",
        "wallet-1", "wallet-2", "leaderboard-1", "leaderboard-2", "bots", "analysis", "identity",
    ]  # fmt: skip
    ports = [p for i in plan for p in (i.grpc_port, i.metrics_port, i.ws_port) if p]
    assert len(ports) == len(set(ports))  # nothing shares a port
    by = {i.name: i for i in plan}
    assert by["gateway-1"].grpc_port == 50051 and by["matchmaking"].grpc_port == 50052
    assert by["wallet-1"].grpc_port == 50053 and by["wallet-2"].grpc_port == 50281
    assert (by["gateway-1"].ws_port, by["gateway-2"].ws_port) == (50080, 50081)


def test_one_of_each_keeps_the_documented_layout(tmp_path: Path) -> None:
    plan = Cluster(ClusterConfig(replicas={"table": 1}, data_dir=tmp_path, base_port=50050))._plan()
    assert {i.name: i.grpc_port for i in plan} == {
        "gateway": 50051, "matchmaking": 50052, "table-1": 50060, "wallet": 50053,
        "leaderboard": 50054, "bots": 50055, "analysis": 50056, "identity": 50057,
    }  # fmt: skip


def test_replicated_sql_services_get_postgres_and_peers_reach_every_replica(
    tmp_path: Path,
) -> None:
    """Several wallet (or leaderboard) processes need one shared database, so the runner starts
    an embedded PostgreSQL for them; every peer gets the whole replica list for its balanced
    channel."""
    assert not Cluster(ClusterConfig(data_dir=tmp_path)).wants_postgres
    assert Cluster(ClusterConfig(data_dir=tmp_path, postgres=True)).wants_postgres
    config = ClusterConfig(replicas={"leaderboard": 2}, data_dir=tmp_path, base_port=50050)
    cluster = Cluster(config)
    assert cluster.wants_postgres
    external = ClusterConfig(replicas={"wallet": 2}, data_dir=tmp_path, database_url="x://y")
    assert not Cluster(external).wants_postgres  # an operator's own database is used as given
    cluster.instances = cluster._plan()
    cluster.postgres_url = "postgresql+asyncpg://postgres@127.0.0.1:50012"
    env = cluster._service_env(next(i for i in cluster.instances if i.name == "gateway"))
    assert env["BG_LEADERBOARD_ADDR"] == "127.0.0.1:50054,127.0.0.1:50291"
    assert env["BG_WALLET_ADDR"] == "127.0.0.1:50053"
    board = cluster._service_env(next(i for i in cluster.instances if i.name == "leaderboard-2"))
    assert board["BG_DATABASE_URL"] == "postgresql+asyncpg://postgres@127.0.0.1:50012/leaderboard"
    # Accounts are the identity service's: the gateway has no database (issue 44), so two
    # gateways alone need no PostgreSQL.
    assert "BG_DATABASE_URL" not in env and env["BG_IDENTITY_ADDR"] == "127.0.0.1:50057"
    assert not Cluster(ClusterConfig(replicas={"gateway": 2}, data_dir=tmp_path)).wants_postgres


def test_up_refuses_a_kafka_namespace_kafka_could_not_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A namespace with a dot or a space is refused before anything starts (exit 2, why)."""
    from infra.cli.bgcluster import main

    with pytest.raises(SystemExit) as ended:
        main(["up", "--data-dir", str(tmp_path), "--kafka-namespace", "a.b c"])
    assert ended.value.code == 2
    assert "--kafka-namespace must match" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing written


def test_every_gateway_reaches_every_matchmaking_replica(tmp_path: Path) -> None:
    config = ClusterConfig(
        replicas={"gateway": 2, "matchmaking": 2}, data_dir=tmp_path, base_port=50050
    )
    cluster = Cluster(config)
    cluster.instances = cluster._plan()
    lobbies = [i.address for i in cluster.instances if i.service == "matchmaking"]
    assert len(lobbies) == 2
    for gateway in (i for i in cluster.instances if i.service == "gateway"):
        assert cluster._service_env(gateway)["BG_MATCHMAKING_ADDR"] == ",".join(lobbies)


def test_replicas_are_asked_for_one_way(tmp_path: Path) -> None:
    from infra.cli.bgcluster import _parser, parse_replicas

    args = _parser().parse_args(["up", "--replicas", "table=3", "--replicas", "gateway=2"])
    replicas = parse_replicas(args.replicas)
    assert replicas == {"table": 3, "gateway": 2}
    cluster = Cluster(ClusterConfig(replicas=replicas, data_dir=tmp_path, base_port=50050))
    assert (cluster.count("table"), cluster.count("gateway"), cluster.count("wallet")) == (3, 2, 1)
    assert Cluster(ClusterConfig(data_dir=tmp_path)).count("table") == 2  # the default
    for bad in (["table=0"], ["tables=2"], ["table"], ["table=10"]):
        with pytest.raises(ValueError, match=r"SERVICE=1\.\.9"):
            parse_replicas(bad)
    with pytest.raises(SystemExit):  # the old flags are gone
        _parser().parse_args(["up", "--table-replicas", "3"])
