"""Every error code a client can get has a sentence a player reads (issue 27, item 6): the
browser's table (services/gateway/web/words.js) holds one for each code of docs/protocol.md's
error table (or says the page shows it another way), and the protocol's "What players read"
table is that same list, word for word."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORDS = ROOT / "services" / "gateway" / "web" / "words.js"
PROTOCOL = ROOT / "docs" / "protocol.md"


def _says() -> dict[str, str]:
    text = WORDS.read_text()
    body = text[text.index("export const SAYS = {") : text.index("};")]
    return dict(re.findall(r'^\s+([A-Z][A-Z_]+): "([^"]+)",$', body, flags=re.M))


def _silent() -> set[str]:
    found = re.search(r"export const SILENT = new Set\(\[([^\]]*)\]\)", WORDS.read_text())
    assert found
    return set(re.findall(r'"([A-Z_]+)"', found.group(1)))


def _section(title: str, until: str) -> str:
    text = PROTOCOL.read_text()
    return text[text.index(title) : text.index(until, text.index(title))]


def test_every_code_of_the_protocol_has_a_players_sentence() -> None:
    codes = set()
    for line in _section("## Errors", "### What players read").splitlines():
        if line.startswith("| ") and not line.startswith(("| code", "|---")):
            codes |= set(re.findall(r"`([A-Z][A-Z_]+)`", line.split("|")[1]))
    codes = {c for c in codes if not c.startswith("REJECTION_CODE")}
    assert len(codes) > 80
    assert sorted(codes - set(_says()) - _silent()) == []


def test_the_protocols_players_table_is_the_clients() -> None:
    rows = re.findall(
        r"^\| `([A-Z][A-Z_]+)` \| (.+) \|$",
        _section("### What players read", "### Rate limits"),
        flags=re.M,
    )
    says = _says()
    assert rows == [(code, says[code]) for code in says]
    silent = _section("### What players read", "### Rate limits")
    assert all(f"`{code}`" in silent for code in _silent())
