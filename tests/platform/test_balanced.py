"""Balanced channels (issue 14 req. 2): the target names every replica the way gRPC's own
resolvers read it, and the service config asks for round robin and UNAVAILABLE retries."""

from __future__ import annotations

import json

import pytest

from services.common.balanced import service_config, target


def test_replica_lists_become_grpc_targets() -> None:
    assert target(["127.0.0.1:50061", "127.0.0.1:50062"]) == "ipv4:127.0.0.1:50061,127.0.0.1:50062"
    assert target(["[::1]:50061"]) == "ipv6:[::1]:50061"
    assert target(["table-headless:50061"]) == "dns:///table-headless:50061"  # every A record
    assert target(["dns:///table-headless.bg.svc:50061"]) == "dns:///table-headless.bg.svc:50061"
    assert target([" 10.0.0.1:1 ", ""]) == "ipv4:10.0.0.1:1"


@pytest.mark.parametrize("addresses", [[], ["table-a:1", "table-b:1"], ["127.0.0.1:1", "[::1]:1"]])
def test_targets_gRPC_cannot_resolve_are_refused(addresses: list[str]) -> None:
    with pytest.raises(ValueError):
        target(addresses)


def test_the_service_config_balances_and_retries_only_unavailable() -> None:
    config = json.loads(service_config("bg.table.v1.TableService"))
    assert config["loadBalancingConfig"] == [{"round_robin": {}}]
    (method,) = config["methodConfig"]
    assert method["name"] == [{"service": "bg.table.v1.TableService"}]
    assert method["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"]
    assert method["retryPolicy"]["maxAttempts"] > 1
