"""docs/ by reader (issue 44, item 1): the settings reference is the code's, every alert has its
runbook section, and every relative link in the README and docs/ reaches a file and heading."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from infra.cli import settings_reference

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, re.M)}


def test_the_settings_reference_is_generated_from_the_code() -> None:
    page = (ROOT / "docs" / "settings.md").read_text()
    assert page == settings_reference.render(), "run python -m infra.cli.settings_reference"


def test_every_alert_links_its_runbook_section() -> None:
    rules = yaml.safe_load((ROOT / "infra" / "prometheus" / "alerts.yml").read_text())
    alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    sections = _anchors(ROOT / "docs" / "runbook.md")
    assert len(alerts) >= 10
    assert [r["alert"] for r in alerts if _slug(r["alert"]) not in sections] == []
    assert [r["alert"] for r in alerts if r["annotations"].get("runbook_url")
            != f"docs/runbook.md#{_slug(r['alert'])}"] == []  # fmt: skip


def test_every_relative_link_reaches_its_file_and_heading() -> None:
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # an absolute URL: not checked offline
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_the_readme_links_every_page_of_the_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    linked = {Path(t.partition("#")[0]).name for t in LINK.findall(readme)}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert sorted(pages - linked) == []


def test_the_slug_follows_github() -> None:
    assert _slug("The admin API and CLI") == "the-admin-api-and-cli"
    assert _slug("`bgcluster` up: ports") == "bgcluster-up-ports"


def test_the_operations_page_lists_every_alert() -> None:
    rules = yaml.safe_load((ROOT / "infra" / "prometheus" / "alerts.yml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    page = (ROOT / "docs" / "operations.md").read_text()
    listed = page[page.index("- Alerts (") : page.index("- Dashboards")]
    assert set(re.findall(r"`([A-Z][A-Za-z]+)`", listed)) == alerts
    assert f"- Alerts ({len(alerts)}," in listed
