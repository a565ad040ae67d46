"""The README documents every setting a service reads, and opens with the two commands."""

from __future__ import annotations

from pathlib import Path

from services.analysis.settings import AnalysisSettings
from services.common.settings import describe
from services.gateway.settings import GatewaySettings
from services.leaderboard.settings import LeaderboardSettings
from services.matchmaking.settings import MatchmakingSettings
from services.table.settings import TableSettings
from services.wallet.settings import WalletSettings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_readme_opens_with_the_two_commands() -> None:
    block = README.split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in block.splitlines()] == ["make up", "make test"]


def test_every_setting_is_documented() -> None:
    classes = (
        GatewaySettings,
        MatchmakingSettings,
        TableSettings,
        WalletSettings,
        LeaderboardSettings,
        AnalysisSettings,
    )
    envs = {env for cls in classes for env, _, _ in describe(cls)}
    missing = sorted(env for env in envs if f"`{env}`" not in README)
    assert missing == []


def test_the_readme_says_where_bgcluster_lives() -> None:
    """Issue 41, item 21: `bgcluster play` answered "command not found"; the README names the
    command by its path (it is not on PATH until the venv is activated)."""
    assert ".venv/bin/bgcluster play --vs-cpu expert" in README
    assert "source .venv/bin/activate" in README
