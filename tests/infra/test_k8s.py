"""The Kubernetes manifests: every overlay renders, validates against the Kubernetes schemas,
and every Deployment has probes, limits and runs as non-root on a read-only root filesystem;
every Service selects pods that exist (issue 9)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CRDS = {"Kafka", "KafkaNodePool", "KafkaTopic", "ServiceMonitor", "PrometheusRule"}  # operators'

K8S_VERSION = "1.32.0"


def render(overlay: str, tmp_path: Path) -> list[dict[str, Any]]:
    tree = tmp_path / "k8s"
    shutil.copytree(ROOT / "k8s", tree)
    if overlay == "prod":  # the real secrets come from the operator's environment
        (tree / "overlays/prod/secrets.env").write_text(
            "BG_BOTS_SECRET=b\nBG_WALLET_OPERATOR_TOKEN=y\nPOSTGRES_PASSWORD=z\n"
            "BG_DATABASE_URL=postgresql+asyncpg://bg:z@postgres:5432/bg\n"
        )
        (tree / "overlays/prod/signing.env").write_text("BG_TOKEN_SECRET=x\n")
        (tree / "overlays/prod/identity.env").write_text(
            "BG_REFRESH_KEYS=r\nBG_OPERATOR_KEYS=admin=k\nBG_OPERATOR_SECRET=o\n"
        )
    out = subprocess.run(
        ["kubectl", "kustomize", str(tree / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.fixture(params=["dev", "prod"])
def docs(request: pytest.FixtureRequest, tmp_path: Path) -> list[dict[str, Any]]:
    return render(request.param, tmp_path)


def test_every_resource_validates(docs: list[dict[str, Any]]) -> None:
    kinds = {d["kind"] for d in docs}
    expected = {
        "Deployment", "Service", "ServiceAccount", "HorizontalPodAutoscaler",
        "PodDisruptionBudget", "StatefulSet", "NetworkPolicy", "ConfigMap", "Secret", "Ingress",
    }  # fmt: skip
    assert expected <= kinds
    assert kinds >= CRDS
    for doc in docs:
        if doc["kind"] not in CRDS:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_deployments_have_probes_limits_and_no_root(docs: list[dict[str, Any]]) -> None:
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    assert {d["metadata"]["name"] for d in deployments} == {
        "gateway", "matchmaking", "table", "wallet", "leaderboard", "bots", "analysis", "identity",
    }  # fmt: skip
    for d in deployments:
        pod = d["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        for c in pod["containers"]:
            assert "grpc" in c["readinessProbe"] and "grpc" in c["livenessProbe"], d["metadata"][
                "name"
            ]
            assert c["resources"]["limits"]["cpu"] and c["resources"]["limits"]["memory"]
            assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
            assert c["securityContext"]["readOnlyRootFilesystem"] is True
            assert c["securityContext"]["allowPrivilegeEscalation"] is False
    hpas = {
        d["spec"]["scaleTargetRef"]["name"] for d in docs if d["kind"] == "HorizontalPodAutoscaler"
    }
    assert hpas == {"gateway", "table"}
    pdbs = {d["metadata"]["name"] for d in docs if d["kind"] == "PodDisruptionBudget"}
    assert {"gateway", "table", "wallet"} <= pdbs


def test_every_service_selector_matches_a_workload(docs: list[dict[str, Any]]) -> None:
    pods = [
        d["spec"]["template"]["metadata"]["labels"]
        for d in docs
        if d["kind"] in ("Deployment", "StatefulSet")
    ]
    for svc in (d for d in docs if d["kind"] == "Service"):
        selector = svc["spec"]["selector"]
        assert any(all(labels.get(k) == v for k, v in selector.items()) for labels in pods), svc[
            "metadata"
        ]["name"]


def test_prod_replicates_kafka_three_times_with_idempotent_producers(tmp_path: Path) -> None:
    docs = render("prod", tmp_path)
    kafka = next(d for d in docs if d["kind"] == "Kafka")
    assert kafka["spec"]["kafka"]["config"]["default.replication.factor"] == 3
    assert kafka["metadata"]["annotations"]["strimzi.io/kraft"] == "enabled"
    assert all(
        d["spec"]["replicas"] == 3 for d in docs if d["kind"] in ("KafkaNodePool", "KafkaTopic")
    )
    settings = next(d for d in docs if d["metadata"]["name"].startswith("bg-settings"))["data"]
    assert settings["BG_KAFKA_IDEMPOTENCE"] == "true"
    secret = next(d for d in docs if d["kind"] == "Secret")
    assert "dev-only" not in str(secret)


def test_alerts_dashboards_and_scrapes_agree(docs: list[dict[str, Any]]) -> None:
    """Issue 14 req. 5: the PrometheusRule is alerts.yml (regenerate with python -m
    infra.tools.k8s_rules); the ServiceMonitor names its job as the rules expect (ServiceDown reads
    up{job="bgcluster"}); the dashboards ship as ConfigMaps Grafana's sidecar loads."""
    from infra.tools.k8s_rules import MANIFEST, render

    assert MANIFEST.read_text() == render(), "run: python -m infra.tools.k8s_rules"
    rule = next(d for d in docs if d["kind"] == "PrometheusRule")
    alerts = yaml.safe_load((ROOT / "infra/prometheus/alerts.yml").read_text())
    assert rule["spec"]["groups"] == alerts["groups"]
    monitor = next(d for d in docs if d["kind"] == "ServiceMonitor")
    job_label = monitor["spec"]["jobLabel"]
    services = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] != "valkey"]
    jobs = {s["metadata"]["labels"].get(job_label) for s in services}
    assert jobs == {"bgcluster"}
    assert 'up{job="bgcluster"}' in str(alerts)
    boards = next(d for d in docs if d["metadata"]["name"] == "bg-dashboards")
    assert boards["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert {"overview.json", "money.json"} <= set(boards["data"])


def test_the_gateway_is_served_over_tls_and_every_workload_spreads(
    docs: list[dict[str, Any]],
) -> None:
    ingresses = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Ingress"}
    grpc_in, ws_in = ingresses["gateway-grpc"], ingresses["gateway-ws"]
    assert grpc_in["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"] == (
        "GRPC"
    )
    for ing, port in ((grpc_in, "grpc"), (ws_in, "ws")):
        hosts = {h for t in ing["spec"]["tls"] for h in t["hosts"]}
        for rule in ing["spec"]["rules"]:
            assert rule["host"] in hosts  # never served in the clear
            backend = rule["http"]["paths"][0]["backend"]["service"]
            assert backend == {"name": "gateway", "port": {"name": port}}
    for d in docs:
        if d["kind"] == "Deployment":
            spread = d["spec"]["template"]["spec"]["topologySpreadConstraints"]
            keys = {c["topologyKey"] for c in spread}
            assert keys == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    headless = next(d for d in docs if d["metadata"]["name"] == "table-headless")
    assert headless["spec"]["clusterIP"] == "None"
    settings = next(d for d in docs if d["metadata"]["name"].startswith("bg-settings"))
    assert settings["data"]["BG_TABLE_ADDRS"] == "dns:///table-headless:50061"


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_only_the_gateway_holds_the_signing_key(overlay: str, tmp_path: Path) -> None:
    """Issue 16 req. 3: the players' token-signing key reaches the gateway and no other
    workload: every other one could otherwise mint a token for any player."""
    docs = render(overlay, tmp_path)
    signing = next(
        d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"].startswith("bg-signing")
    )
    assert set(signing["data"]) == {"BG_TOKEN_SECRET"}
    others = [d for d in docs if d["kind"] == "Secret" and d is not signing]
    assert all("BG_TOKEN_SECRET" not in d.get("data", {}) for d in others)
    holders = sorted(
        d["metadata"]["name"]
        for d in docs
        if d["kind"] in ("Deployment", "StatefulSet")
        and signing["metadata"]["name"] in json.dumps(d["spec"]["template"])
    )
    assert holders == ["gateway"]


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_only_the_identity_service_holds_the_refresh_and_operator_keys(
    overlay: str, tmp_path: Path
) -> None:
    """Issue 44 item 3: the refresh successors' keys, the operators' keys and the key of their
    tokens are the identity service's alone (the operators' plane); the gateway, which signs
    players' tokens, holds none of them (nor a database). Identity reaches what the operators'
    tools call; only the gateway calls it."""
    docs = render(overlay, tmp_path)
    refresh = next(
        d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"].startswith("bg-identity")
    )
    assert set(refresh["data"]) == {"BG_REFRESH_KEYS", "BG_OPERATOR_KEYS", "BG_OPERATOR_SECRET"}
    holders = sorted(
        d["metadata"]["name"]
        for d in docs
        if d["kind"] in ("Deployment", "StatefulSet")
        and refresh["metadata"]["name"] in json.dumps(d["spec"]["template"])
    )
    assert holders == ["identity"]
    policies = {d["metadata"]["name"]: d for d in docs if d["kind"] == "NetworkPolicy"}
    callers = policies["identity-ingress"]["spec"]["ingress"][0]["from"]
    assert callers == [{"podSelector": {"matchLabels": {"app": "gateway"}}}]
    sql = policies["postgres-ingress"]["spec"]["ingress"][0]["from"][0]["podSelector"]
    assert "gateway" not in sql["matchExpressions"][0]["values"]
    assert "identity" in sql["matchExpressions"][0]["values"]
    for callee in ("matchmaking", "table", "wallet", "leaderboard", "analysis"):
        sources = policies[f"{callee}-ingress"]["spec"]["ingress"][0]["from"]
        assert {"podSelector": {"matchLabels": {"app": "identity"}}} in sources, callee
    redis = policies["valkey-ingress"]["spec"]["ingress"][0]["from"][0]["podSelector"]
    assert "identity" in redis["matchExpressions"][0]["values"]


def test_the_topics_are_the_clusters_and_every_producer_may_reach_the_broker(
    docs: list[dict[str, Any]],
) -> None:
    """Strimzi makes the topics `bgcluster up` makes (services/common/topics.py), with their
    partitions; the broker's network policy lets in every service that produces or consumes
    (matchmaking publishes the tournaments' results)."""
    from services.contracts.topics import TOPICS

    topics = {
        d["metadata"]["name"]: d["spec"]["partitions"] for d in docs if d["kind"] == "KafkaTopic"
    }
    assert topics == TOPICS
    policy = next(
        d for d in docs if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "kafka-ingress"
    )
    allowed = {
        v
        for source in policy["spec"]["ingress"][0]["from"]
        for e in source["podSelector"].get("matchExpressions", [])
        for v in e["values"]
    }
    assert {"table", "wallet", "leaderboard", "analysis", "matchmaking"} <= allowed


def test_the_load_test_renders_and_validates(tmp_path: Path) -> None:
    """Issue 59: k8s/loadtest, a Locust master (a Service for its web UI and its workers) and
    workers scaled by replicas, the project's load-test image, the operator's key from a
    Secret, the gateway's Service as the target; valid, non-root, read-only, limited."""
    tree = tmp_path / "k8s"
    shutil.copytree(ROOT / "k8s", tree)
    (tree / "loadtest/operator.env").write_text("BG_LOAD_OPERATOR_KEY=" + "k" * 40 + "\n")
    out = subprocess.run(
        ["kubectl", "kustomize", str(tree / "loadtest")], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    master = by[("Deployment", "locust-master")]["spec"]["template"]["spec"]
    workers = by[("Deployment", "locust-worker")]
    assert workers["spec"]["replicas"] >= 1
    service = by[("Service", "locust-master")]
    assert {p["name"] for p in service["spec"]["ports"]} == {"web", "workers"}
    args = master["containers"][0]["args"]
    assert "--master" in args and "--web-ui" in args and "--target=$(LOAD_TARGET)" in args
    settings = next(d for d in docs if d["metadata"]["name"].startswith("loadtest-settings"))
    assert settings["data"]["LOAD_TARGET"] == "gateway:50051"  # the gateway's Service
    secret = next(d for d in docs if d["kind"] == "Secret")
    for spec in (master, workers["spec"]["template"]["spec"]):
        assert spec["securityContext"]["runAsNonRoot"] is True
        container = spec["containers"][0]
        assert container["image"] == "bgcluster-loadtest:latest"
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["resources"]["limits"]["cpu"]
        key = next(e for e in container["env"] if e["name"] == "BG_LOAD_OPERATOR_KEY")
        assert key["valueFrom"]["secretKeyRef"]["name"] == secret["metadata"]["name"]
    policy = by[("NetworkPolicy", "identity-from-locust")]
    assert policy["spec"]["podSelector"]["matchLabels"] == {"app": "identity"}
