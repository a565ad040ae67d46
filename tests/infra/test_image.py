"""The one image every Kubernetes Deployment runs (Dockerfile) holds what its services import:
every source folder a service reaches through its imports (the bots import client/, the
analysis and the bots evaluator/), built by the commands that exist. There is no Docker engine
on the machines the tests run on, so the file is checked against the tree: the image once
lacked evaluator/ and client/ and ran a protogen module that had moved."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
FIRST_PARTY = {"bg", "engine", "evaluator", "services", "client", "infra", "loadtests", "tests"}


def _top_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return found & FIRST_PARTY


def _reached(start: str) -> set[str]:
    """The first-party folders `start`'s modules import, and theirs, transitively (bg/ is
    generated: it imports only itself)."""
    seen, todo = {start}, [start]
    while todo:
        folder = ROOT / todo.pop()
        for path in folder.rglob("*.py") if folder.name != "bg" else ():
            if "tools" in path.relative_to(ROOT).parts[1:2]:
                continue  # developers' tools (evaluator/tools): never imported by a service
            for name in _top_imports(path) - seen:
                seen.add(name)
                todo.append(name)
    return seen


def test_the_image_holds_every_folder_the_services_import() -> None:
    copied = set(re.findall(r"^COPY --from=build /src/(\w+) /app/\1$", DOCKERFILE, re.M))
    built = set(re.findall(r"^COPY (\w+) \1$", DOCKERFILE, re.M))
    needed = _reached("services")
    assert {"client", "evaluator", "engine", "bg"} <= needed  # the walk found real imports
    assert "tests" not in needed
    assert needed <= copied, sorted(needed - copied)
    assert needed - {"bg"} <= built | {"bg"}, sorted(needed - built)  # bg/ is made in the build


def test_the_image_runs_only_modules_that_exist() -> None:
    modules = re.findall(r"python -m ([\w.]+)", DOCKERFILE)
    manifests = " ".join(p.read_text() for p in (ROOT / "k8s").rglob("*.yaml"))
    modules += re.findall(r'"python", "-m", "([\w.]+)"', manifests)
    assert "infra.tools.protogen" in modules and "services.wallet" in modules
    for module in modules:
        path = ROOT / module.replace(".", "/")
        assert path.with_suffix(".py").exists() or (path / "__main__.py").exists(), module


def test_the_build_installs_the_generators_plugins() -> None:
    """protogen runs protoc with mypy-protobuf's plugin (protoc-gen-mypy_grpc)."""
    assert "mypy-protobuf" in DOCKERFILE and "grpcio-tools" in DOCKERFILE


def test_the_load_tests_image_holds_what_they_import() -> None:
    """Issue 59: `docker build --target loadtest` is Locust's master and workers
    (k8s/loadtest): every folder loadtests/ reaches, the load extra, the dashboard it reads."""
    base = DOCKERFILE.split("AS app", 1)[1].split("\nFROM ", 1)[0]
    stage = DOCKERFILE.split("FROM app AS loadtest", 1)[1].split("\nFROM ", 1)[0]
    copied = set(re.findall(r"^COPY --from=build /src/(\w+) /app/\1$", base + stage, re.M))
    needed = _reached("loadtests")
    assert {"loadtests", "services", "client", "engine"} <= needed
    assert needed <= copied, sorted(needed - copied)
    assert "/install-load /usr/local" in stage and '".[load]"' in DOCKERFILE
    assert "COPY --from=build /src/k8s/base/dashboards /app/k8s/base/dashboards" in stage
