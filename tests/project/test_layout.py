"""No service imports another service's modules: what two services share is the platform
(services/common), their shared language (services/contracts) or the protos. The one client
folder a service may use is the seat-side SDK, by the bots (a client of the gateway). Checked on
the source, so a new import fails here."""

from __future__ import annotations

import ast
import dataclasses
import re
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
                    and parts[1] not in (service, "common", "contracts")
                ):
                    crossings.append(f"{path.relative_to(SERVICES)} imports {module}")
                if parts[0] in ("infra", "loadtests", "benchmarks", "tests"):
                    crossings.append(f"{path.relative_to(SERVICES)} imports {module}")
                # The bots play as clients of the gateway, through the seat-side SDK.
                if parts[0] == "client" and (service, module) != ("bots", "client.play_wire"):
                    crossings.append(f"{path.relative_to(SERVICES)} imports {module}")
    assert crossings == []


def test_the_platform_imports_no_service_and_the_language_only_the_platform() -> None:
    for layer, allowed in (("common", ("common",)), ("contracts", ("common", "contracts"))):
        for path in (SERVICES / layer).rglob("*.py"):
            for module in _imports(path):
                parts = module.split(".")
                assert not (parts[0] == "services" and parts[1] not in allowed), (path, module)
                assert parts[0] not in ("client", "infra"), (path, module)


WIRE = SERVICES.parent / "wire"


def test_the_wire_lies_below_the_platform_and_needs_no_transport() -> None:
    """Issue 62, item 5: how a typed error rides a failed call (wire/errors.py) is what the
    platform writes on every refusal and a client reads with nothing of the services: protobuf
    and the generated protos alone, so the platform and the contracts both stand on it (it stood
    in the contracts, which import the platform: an arrow back up)."""
    found = [
        f"{path.name} imports {module}"
        for path in WIRE.rglob("*.py")
        for module in _imports(path)
        if module.split(".")[0] not in ("__future__", "collections", "typing", "google", "bg")
    ]
    assert found == []
    assert not (SERVICES / "contracts" / "error_wire.py").exists()


def test_the_platform_knows_no_service_by_name() -> None:
    """Issue 44, item 4: services/common serves any service; who calls whom (contracts/peers.py)
    and who reads which topic (contracts/topics.py) are tables in the contracts, a migrations
    folder names its own version table."""
    names = sorted(p.name for p in _service_dirs())
    literal = re.compile(r"""["']({})["'](?!\s*:)""".format("|".join(names)))
    found = []
    for path in (SERVICES / "common").rglob("*.py"):
        found += [f"{path.name} imports {m}" for m in _imports(path) if m.startswith("bg.")
                  and not m.startswith("bg.common")]  # fmt: skip
        found += [f"{path.name}: {m.group(0)}" for m in literal.finditer(path.read_text())]
    assert found == [] and "wallet" in names


IO_PACKAGES = ("redis", "aiokafka", "grpc", "sqlalchemy", "asyncpg", "aiosqlite", "socket")


def test_the_contracts_hold_data_and_layouts_and_do_no_io() -> None:
    """Issue 44, item 4: what services share is data, key layouts and pure functions; reading
    or writing them belongs to the adapters (a table's stream reader lives in the gateway's)."""
    found = []
    for path in (SERVICES / "contracts").rglob("*.py"):
        text = path.read_text()
        if "async def" in text or "await " in text:
            found.append(f"{path.name}: a coroutine")
        found += [
            f"{path.name} imports {m}" for m in _imports(path) if m.split(".")[0] in IO_PACKAGES
        ]
    assert found == []


def test_no_folder_imports_in_a_circle() -> None:
    """client/ (the SDK, the terminal, the demo) never imports infra/ (which runs them)."""
    client = SERVICES.parent / "client"
    found = [
        f"{path.name} imports {module}"
        for path in client.rglob("*.py")
        for module in _imports(path)
        if module.split(".")[0] in ("infra", "benchmarks", "loadtests", "tests")
    ]
    assert found == []


def test_the_client_speaks_the_wire_not_the_services() -> None:
    """client/ is a client of the gateway (issue 44, item 4): it depends on the bg/ protos, the
    wire format of a typed error (wire/), the contracts (the vocabulary's proto enums) and the pure
    rules engine every party runs (no I/O, the standard library alone: checked below), never on
    the platform or a service's modules."""
    client = SERVICES.parent / "client"
    found = [
        f"{path.name} imports {module}"
        for path in client.rglob("*.py")
        for module in _imports(path)
        if module.split(".")[0] == "services" and not module.startswith("services.contracts.")
    ]
    assert found == []
    used = {m.split(".")[0] for path in client.rglob("*.py") for m in _imports(path)}
    assert {"bg", "engine", "services", "wire"} <= used  # the check above looked at real imports


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


def test_the_evaluator_runs_on_numpy_and_the_engine_alone() -> None:
    """evaluator/ (issue 28) is numpy and the engine; only its developer tools read ONNX, and
    no service or client imports those tools."""
    import sys

    root = SERVICES.parent
    found = sorted(
        f"{path.relative_to(root)} imports {module}"
        for path in (root / "evaluator").rglob("*.py")
        if "tools" not in path.parts
        for module in _imports(path)
        if module.split(".")[0] not in sys.stdlib_module_names
        and module.split(".")[0]
        not in ("engine", "evaluator", "numpy", "threadpoolctl", "__future__")
    )
    tools = sorted(
        f"{path.relative_to(root)} imports {module}"
        for folder in ("services", "client", "engine", "evaluator")
        for path in (root / folder).rglob("*.py")
        if "tools" not in path.parts
        for module in _imports(path)
        if module.startswith(("evaluator.tools", "onnx"))
    )
    assert found == [] and tools == []


# Modules that work on an adapter directly, and why (everything else sees adapters through a
# port, and only the composition root makes them).
INTEGRATION_PATHS = {
    # The clock worker and the Kafka relay read the Redis store's per-shard sets.
    "table/clock.py",
    "table/relay.py",
}


def _service_dirs() -> list[Path]:
    return sorted(
        p
        for p in SERVICES.iterdir()
        if (p / "__init__.py").exists() and p.name not in ("common", "contracts")
    )


def test_every_service_has_one_shape() -> None:
    """Issue 26: `__main__` runs `app.build_app` (the one composition root), `settings` reads
    the environment; a service with an API serves it from `api.py`, its ports are Protocols in
    `ports.py`, their implementations in `adapters/`, its metrics in `metrics.py`; a service
    with SQL keeps its Alembic scripts in `migrations/`, which app.py migrates at start."""
    wrong = []
    for service in _service_dirs():
        name = service.name
        for needed in ("__main__.py", "app.py", "settings.py"):
            if not (service / needed).exists():
                wrong.append(f"{name} has no {needed}")
        if "def build_app(" not in (service / "app.py").read_text():
            wrong.append(f"{name}/app.py has no build_app")
        for path in service.rglob("*.py"):
            rel = str(path.relative_to(SERVICES))
            tree = ast.parse(path.read_text())
            protocols = [
                node.name
                for node in ast.walk(tree)
                if isinstance(node, ast.ClassDef)
                and any(getattr(b, "id", "") == "Protocol" for b in node.bases)
            ]
            if protocols and path.name != "ports.py":
                wrong.append(f"{rel} defines ports {protocols} outside ports.py")
            if "prometheus_client" in _imports(path) and path.name != "metrics.py":
                wrong.append(f"{rel} makes metrics outside metrics.py")
            adapters = [m for m in _imports(path) if m.startswith(f"services.{name}.adapters")]
            composes = path.name in ("app.py", "__main__.py") and path.parent == service
            if adapters and not (composes or "adapters" in path.parts or rel in INTEGRATION_PATHS):
                wrong.append(f"{rel} imports {adapters}: only app.py makes adapters")
        if (service / "migrations").exists():
            app = (service / "app.py").read_text()
            if 'with_name("migrations")' not in app or "services.common.migrate" not in app:
                wrong.append(f"{name}/app.py does not migrate migrations/ (services.common)")
        if (service / "adapters").exists() and not (service / "ports.py").exists():
            wrong.append(f"{name} has adapters but no ports.py")
        if (service / "ports.py").exists():
            for module in _imports(service / "ports.py"):
                if ".adapters" in module:
                    wrong.append(f"{name}/ports.py imports {module}")
    assert wrong == []


def test_every_composition_root_registers_its_closes_where_it_makes_them() -> None:
    """Each resource's close goes on the app's AsyncExitStack (`app.closes`, `app.channel`)
    where it is made: no close-down list kept by hand in a root."""
    for service in _service_dirs():
        text = (service / "app.py").read_text()
        assert "on_stop" not in text and "close-down" not in text, service.name


def test_infra_is_split_by_job() -> None:
    """infra/: the cluster (runner and what it starts), the command line, the tools (code
    generation, the Kubernetes rules), the Prometheus files; no module loose at its top."""
    infra = SERVICES.parent / "infra"
    assert sorted(p.name for p in infra.iterdir() if not p.name.startswith((".", "__"))) == [
        "cli",
        "cluster",
        "prometheus",
        "tools",
    ]
    for job in ("cli", "tools"):
        for path in (infra / job).rglob("*.py"):
            for module in _imports(path):
                assert not module.startswith("services.") or job == "cli", (path, module)


def test_the_services_see_the_event_log_only_through_its_port() -> None:
    """Issue 44, item 2: relays, outboxes and consumers speak the port
    (services/common/log_port.py); aiokafka and the embedded broker's machinery stay in its two
    adapters (and the platform's wiring of them, services/common/event_log.py)."""
    adapters = {"embedded_generations.py", "kafka_log.py", "embedded_log.py", "kafka_clients.py"}
    inner = {f"services.common.{name[:-3]}" for name in adapters}
    found = []
    for path in SERVICES.rglob("*.py"):
        in_adapter = path.parent == SERVICES / "common" and path.name in adapters
        for module in _imports(path):
            if module.split(".")[0] == "aiokafka" and not in_adapter:
                found.append(f"{path.relative_to(SERVICES)} imports {module}")
            if module in inner and path.parent != SERVICES / "common":
                found.append(f"{path.relative_to(SERVICES)} imports {module}")
    assert found == []


# An embedded broker's words: its generations, incarnations and the question whether a log
# confirms at all (issue 62, item 1).
_EMBEDDED_WORDS = {"gen", "generation", "incarnation", "confirms", "partition", "offset"}


def test_the_log_port_speaks_the_log_and_its_users_ask_no_mode() -> None:
    """Issue 62, item 1: the port's types and calls carry receipts, keys, headers and
    verdicts, not an embedded broker's placement; and no relay, outbox or service anywhere
    reads one of those words off what the port hands it (no `.confirms`, `.incarnation`,
    `.gen`: the same code in both modes)."""
    port = SERVICES / "common" / "log_port.py"
    named = set()
    for node in ast.walk(ast.parse(port.read_text())):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            named.add(node.target.id)  # a dataclass's field
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            named.add(node.name)
            named.update(a.arg for a in node.args.args)
    assert named & _EMBEDDED_WORDS == set()
    adapters = {"embedded_generations.py", "embedded_log.py", "kafka_log.py", "topics.py"}
    read = _EMBEDDED_WORDS - {"partition", "offset"}  # str.partition, a reader's offsets
    found = []
    for path in SERVICES.rglob("*.py"):
        if path.parent == SERVICES / "common" and path.name in adapters:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in read:
                found.append(f"{path.relative_to(SERVICES)}: .{node.attr}")
    assert found == []


def test_the_gateway_is_an_edge_with_no_database() -> None:
    """Issue 44 item 3: accounts, bans and the audit log are the identity service's; the
    gateway imports no SQL, keeps no migrations and reads no database setting."""
    from services.gateway.settings import GatewaySettings

    gateway = SERVICES / "gateway"
    sql = [
        f"{p.relative_to(SERVICES)} imports {m}"
        for p in gateway.rglob("*.py")
        for m in _imports(p)
        if m.split(".")[0] in ("sqlalchemy", "alembic", "aiosqlite", "asyncpg")
        or m in ("services.common.migrate",)
    ]
    assert sql == []
    assert not (gateway / "migrations").exists()
    assert "database_url" not in {f.name for f in dataclasses.fields(GatewaySettings)}


def test_the_gateway_keeps_no_chat_or_friends_state() -> None:
    """Issue 44 item 3: chat and friends are the identity service's (bg.social.v1), on state it
    alone writes; the gateway delivers them live (a table's chat channel, its Friends streams)
    and touches none of their keys. Fails on the tree before, whose gateway kept both."""
    state = {
        "chat_key", "chat_mutes_key", "chat_removed_key", "chat_silenced_key",
        "chat_reported_key", "CHAT_REPORTS", "CHAT_KEEP_S", "follows_key", "blocks_key",
        "challenge_key", "challenges_sent_key", "challenges_received_key",
    }  # fmt: skip
    found = []
    for path in (SERVICES / "gateway").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "services.contracts.redis_keys":
                found += [
                    f"{path.relative_to(SERVICES)}: {a.name}" for a in node.names if a.name in state
                ]
    assert found == []
    assert not (SERVICES / "gateway" / "chat.py").exists()
    assert not (SERVICES / "gateway" / "friends.py").exists()


SOURCE_FOLDERS = ("services", "engine", "evaluator", "client", "infra", "loadtests", "benchmarks")


def test_the_formatter_is_switched_off_only_for_tables_of_data() -> None:
    """Issue 62, item 6: `# fmt: skip` keeps a table of data (a module's constant tuple, list,
    set or dict laid out by hand) readable; everything else is the formatter's."""
    root = SERVICES.parent
    found = []
    for folder in SOURCE_FOLDERS:
        for path in (root / folder).rglob("*.py"):
            text = path.read_text()
            if "# fmt: skip" not in text:
                continue
            tables = {
                node.end_lineno
                for node in ast.parse(text).body
                if isinstance(node, ast.Assign | ast.AnnAssign)
                and isinstance(node.value, ast.Tuple | ast.List | ast.Set | ast.Dict)
            }
            for number, line in enumerate(text.splitlines(), start=1):
                if line.rstrip().endswith("# fmt: skip") and number not in tables:
                    found.append(f"{path.relative_to(root)}:{number}")
    assert found == []


def test_the_gateways_handlers_reach_the_services_through_ports() -> None:
    """Issue 62, item 3: the application layer is grouped by what it serves (account, lobby,
    play, records, social: services/gateway/*_handlers.py), and neither it nor sign-in nor the
    streams holds a raw gRPC stub: the lobby, boards, analyses and balances are ports
    (services/gateway/ports.py) with their adapters in adapters/. The table's own calls (owner
    routing, command streams: table_calls.py, command_lines.py) are the command path's."""
    gateway = SERVICES / "gateway"
    users = [*gateway.glob("*handlers.py"), gateway / "sign_in.py", gateway / "play_streams.py"]
    assert len(users) == 8
    found = [
        f"{path.name} imports {module}"
        for path in users
        for module in _imports(path)
        if module.endswith("_pb2_grpc") or module == "grpc.aio"
    ]
    assert found == []


def test_the_gateway_runs_no_evaluator() -> None:
    """Issue 62, item 3: hints are the analysis service's (AnalysisService.Hint), where the
    evaluator lives: a hint's tens of milliseconds never hold the edge's streams."""
    found = [
        f"{path.relative_to(SERVICES)} imports {module}"
        for path in (SERVICES / "gateway").rglob("*.py")
        for module in _imports(path)
        if module.split(".")[0] in ("evaluator", "numpy")
    ]
    assert found == []


def test_the_browser_client_is_screens_that_import_no_other_screen() -> None:
    """Issue 62, item 4: the browser client is ES modules by screen and concern (no build step);
    a screen calls another through session.js's `nav`, which app.js fills, so no screen imports
    another (no circle), and no module is the whole client again."""
    web = SERVICES / "gateway" / "web"
    shared = {"api.js", "board.js", "replay.js", "standings.js", "verify.js", "words.js"}
    modules = {p.name: p.read_text() for p in web.glob("*.js")}
    assert {"session.js", "table.js", "lobby.js", "history.js"} <= set(modules)
    found = []
    for name, text in modules.items():
        imported = set(re.findall(r'from "\./([\w.]+)"', text))
        allowed = set(modules) if name == "app.js" else shared | {"session.js"}
        if name in shared | {"session.js"}:
            allowed = shared - {name}
        found += [f"{name} imports {other}" for other in sorted(imported - allowed)]
        if len(text.splitlines()) > 600:
            found.append(f"{name}: {len(text.splitlines())} lines")
    assert found == []
    # Every name imported is one its module exports (else the page never loads: a module that
    # fails to link stops them all).
    exported = {
        name: set(
            re.findall(r"^export (?:async )?(?:function|const|let|class) ([\w$]+)", text, re.M)
        )
        for name, text in modules.items()
    }
    missing = [
        f"{name} imports {wanted} from {source}"
        for name, text in modules.items()
        for names, source in re.findall(r'import \{([^}]*)\} from "\./([\w.]+)"', text)
        for wanted in (n.strip() for n in names.split(","))
        if wanted and wanted not in exported[source]
    ]
    assert missing == []
