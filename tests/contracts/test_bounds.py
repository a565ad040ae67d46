"""The contract as documented is the contract the server keeps (issue 41, "Tests"): every error
code a service can raise is in docs/protocol.md's tables; every bound the docs give is made from
the one list the servers check against (services/contracts/bounds.py), and so is the table of
what each request must name; the browser's name field says the server's rule. (The real
gateway's answers at each bound: tests/cluster/test_contract.py.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from services.contracts import bounds
from services.gateway import edge_bounds

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()
ERRORS = {"ServiceError", "InvalidArgument", "NotFound", "Conflict", "PermissionDenied",
          "Unauthenticated", "Unavailable", "Rejected"}  # fmt: skip


def _raised() -> dict[str, set[str]]:
    """Every literal error code a service raises, with the files raising it."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "services").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            first = node.args[0]
            if (
                name in ERRORS
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and re.fullmatch(r"[A-Z][A-Z_]+", first.value)
            ):
                found.setdefault(first.value, set()).add(str(path.relative_to(ROOT)))
    return found


def _section(title: str) -> str:
    start = PROTOCOL.index(title)
    end = PROTOCOL.find("\n#", start + len(title))
    return PROTOCOL[start : end if end > 0 else None]


def _codes(text: str) -> set[str]:
    return set(re.findall(r"`([A-Z][A-Z_]+)`", text))


def test_every_code_a_service_raises_is_in_the_documented_tables() -> None:
    raised = _raised()
    assert len(raised) > 100
    clients = _codes(_section("## Errors"))
    between = _codes(_section("### Between the services"))
    missing = {c: sorted(where) for c, where in raised.items() if c not in clients | between}
    assert missing == {}
    # A code the gateway itself raises reaches clients, as does one of the accounts' (the
    # identity service's IdentityService, whose refusals the gateway hands on): both are in
    # the clients' table. (The operators' admin API is not the clients'.)
    edge = ("services/gateway/", "services/identity/api.py", "identity/adapters/sql_accounts.py")
    gateway = {c for c, where in raised.items() if any(e in w for w in where for e in edge)}
    assert sorted(gateway - clients) == []
    # The engine's refusals are the rules' codes of the table's first row.
    from engine.vocabulary import RejectionCode

    assert {r.value for r in RejectionCode} <= clients | between


def test_the_bounds_table_is_made_from_the_servers_bounds() -> None:
    assert bounds.table() in PROTOCOL
    assert edge_bounds.required_table() in PROTOCOL
    assert edge_bounds.MAX_BY_FIELD["reason"] == bounds.REASON_MAX
    assert edge_bounds.MAX_BY_FIELD["guest_name"] == bounds.GUEST_MAX


def test_the_name_rule_the_player_reads_is_the_servers() -> None:
    """Issue 41, item 2: the form's hint and the refusal's sentence say the rule the server
    keeps (its bounds and its reserved words), never "up to 32"; issue 60, item 5: the field
    takes any length and the page says a name's length is past the server's bound."""
    page = (ROOT / "services" / "gateway" / "web" / "index.html").read_text()
    field = re.search(r'<input id="guest-name"[^>]*>', page)
    assert field is not None and "maxlength" not in field.group(0)  # never cut without a word
    app = (ROOT / "services" / "gateway" / "web" / "account.js").read_text()
    assert f"const NAME_MAX = {bounds.NAME_MAX};" in app  # what the page says before sending
    hint = re.search(r'<p id="name-rule"[^>]*>([^<]+)</p>', page)
    words = (ROOT / "services" / "gateway" / "web" / "words.js").read_text()
    sentence = re.search(r'INVALID_NAME: "([^"]+)"', words)
    assert hint is not None and sentence is not None
    for text in (hint.group(1), sentence.group(1)):
        assert f"{bounds.NAME_MIN} to {bounds.NAME_MAX}" in text
        assert all(word in text for word in ("cpu", "guest", "admin"))
        assert "32" not in text
