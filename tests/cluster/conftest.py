"""The cluster the gateway, play-protocol, contract and admin tests share: one `bgcluster up`
(two table replicas, real Valkey, Tansu, SQLite), clocks scaled by 0.05. Those modules run last in
the package (see `pytest_collection_modifyitems`), so the cluster starts once and stops with the
package: it never idles beside the chaos, load or browser tests. Each
test makes players of its own, so they do not see each other."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.browser import browser, chromium  # noqa: F401  (the pages' fixtures)
from tests.helpers import running_cluster

SECRET = "e2e-token-secret-0123456789-abcdef"
BOTS_SECRET = "e2e-bots-secret-0123456789-abcdef"


SHARED = (
    "test_admin.py",
    "test_contract.py",
    "test_gateway.py",
    "test_no_shows.py",
    "test_play_protocol.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the modules on the shared cluster to the end of this package's tests (kept in their
    order; everything else keeps its place)."""
    here = [i for i, item in enumerate(items) if item.path.parent.name == "cluster"]
    if not here:
        return
    block = [items[i] for i in here]
    moved = [t for t in block if t.path.name not in SHARED] + [
        t for t in block if t.path.name in SHARED
    ]
    for slot, item in zip(here, moved, strict=True):
        items[slot] = item


@pytest.fixture(scope="package")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, valkey_url: str, kafka_bootstrap: str
) -> Iterator[dict[str, Any]]:
    """Addresses by instance name, plus "operator" (the wallet's operator token), "admin" (the
    operator `bgcluster admin` signs in as) and "data" (the data directory)."""
    data = tmp_path_factory.mktemp("gw-cluster")
    env = {
        "BG_CLOCK_SCALE": "0.05",
        "BG_TOKEN_SECRET": SECRET,
        "BG_BOTS_SECRET": BOTS_SECRET,
        "BG_RATE_PER_S": "500",
        # Every tested player is flagged after one match: the review queue's plumbing on a real
        # match (the test's statistics: tests/analysis/test_fair_play.py, the simulation).
        "BG_FAIR_PLAY_THRESHOLD": "0",
    }
    args = ("--redis-url", valkey_url, "--kafka-bootstrap", kafka_bootstrap)
    with running_cluster(data, env, *args) as state:
        yield {s["instance"]: s["address"] for s in state["services"]} | {
            "operator": state["operator_token"],
            "admin": state["operator"],
            "data": str(data),
        }
