"""Issue 17 req. 2: no service imports another service's modules; what two services share lives
in services/common (or the protos). Checked on the source, so a new import fails here."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "services"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_service_imports_another() -> None:
    services = sorted(p.name for p in SERVICES.iterdir() if (p / "__init__.py").exists())
    assert {"gateway", "table", "wallet", "common"} <= set(services)
    crossings = []
    for service in services:
        if service == "common":
            continue
        for path in (SERVICES / service).rglob("*.py"):
            for module in _imports(path):
                parts = module.split(".")
                if (
                    parts[0] == "services"
                    and len(parts) > 1
                    and parts[1] not in (service, "common")
                ):
                    crossings.append(f"{path.relative_to(SERVICES)} imports {module}")
                if parts[0] in ("infra", "client", "loadtests", "benchmarks", "tests"):
                    crossings.append(f"{path.relative_to(SERVICES)} imports {module}")
    assert crossings == []


def test_common_imports_no_service() -> None:
    for path in (SERVICES / "common").rglob("*.py"):
        for module in _imports(path):
            parts = module.split(".")
            assert not (parts[0] == "services" and parts[1] != "common"), (path, module)


def test_the_engine_imports_only_the_standard_library_and_itself() -> None:
    """The rules engine is pure (engine/__init__.py): no I/O, no third-party packages, so the
    bots, the clients and every service run the same rules."""
    import sys

    engine = SERVICES.parent / "engine"
    foreign = sorted(
        f"{path.name} imports {module}"
        for path in engine.rglob("*.py")
        for module in _imports(path)
        if module.split(".")[0] not in sys.stdlib_module_names
        and module.split(".")[0] not in ("engine", "__future__")
    )
    assert foreign == []
