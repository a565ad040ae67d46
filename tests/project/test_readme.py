"""The README fits on a screen, opens with the two commands and says where `bgcluster` lives
(issue 44, item 1; issue 41, item 21)."""

from __future__ import annotations

from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_readme_opens_with_the_two_commands() -> None:
    block = README.split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in block.splitlines()] == ["make up", "make test"]


def test_the_readme_fits_on_a_screen_or_two() -> None:
    assert len(README.splitlines()) <= 150


def test_the_readme_says_where_bgcluster_lives() -> None:
    """`bgcluster play` answered "command not found"; the README names the command by its path
    (it is not on PATH until the venv is activated)."""
    assert ".venv/bin/bgcluster play --vs-cpu expert" in README
    assert "source .venv/bin/activate" in README
