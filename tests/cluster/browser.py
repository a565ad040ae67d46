"""The browser tests' shared parts (issue 15's clients and issue 41's journeys): a cluster for the
pages (clocks x 0.2), Debian's Chromium driven by Playwright, and a person's moves by clicks on
the lit points the server sends (the tests read what the page shows through `window.bg.state()`).
Screenshots land in BG_ARTIFACTS (default build/artifacts/)."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import running_cluster

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("BG_ARTIFACTS", Path(__file__).parents[2] / "build" / "artifacts"))
OVER = ("PHASE_MATCH_OVER", "PHASE_CLOSED")


@contextmanager
def browser_cluster(data: Path, valkey_url: str, kafka_bootstrap: str) -> Iterator[dict[str, Any]]:
    """A cluster for the pages: its gateway's web address, gRPC, the wallet, the operator."""
    env = {
        "BG_CLOCK_SCALE": "0.2",
        "BG_TOKEN_SECRET": "browser-token-secret-0123456789-abcdef",
        "BG_FRIENDS_REFRESH_S": "1",  # the pages see other players' presence change in a second
        "BG_ANALYSIS_POPULATION_S": "0",  # each page places its player among those before it
        "BG_FAIR_PLAY_THRESHOLD": "0",  # every tested player flagged: the console's queue
    }
    args = ("--redis-url", valkey_url, "--kafka-bootstrap", kafka_bootstrap)
    with running_cluster(data, env, *args) as state:
        gateway = next(s for s in state["services"] if s["name"] == "gateway")
        wallet = next(s for s in state["services"] if s["name"] == "wallet")
        identity = next(s for s in state["services"] if s["name"] == "identity")
        yield {
            "url": gateway["ws"].replace("ws://", "http://"),
            "grpc": gateway["address"],
            "wallet": wallet["address"],
            "operator": state["operator_token"],
            "admin": state["operator"],  # an operator's name and key (the admin API)
            "identity": identity["address"],  # where the admin API is served
            "console": identity["console"],  # the operators' web console
            "data": data,  # the cluster's data directory (cluster.json: its processes)
        }


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return CHROMIUM


@pytest.fixture
async def browser(chromium: Path) -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(chromium), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            await browser.close()


async def _page(browser: Any, url: str, name: str, phone: bool = False, guest: bool = False) -> Any:
    """A fresh browser context (its own device) logged in as `name` (a device account, or a
    guest)."""
    viewport = {"width": 390, "height": 844} if phone else {"width": 1280, "height": 800}
    context = await browser.new_context(viewport=viewport)
    page = await _tab(context, url)
    await page.get_by_label("Your name").fill(name)
    await page.get_by_role("button", name="Play as guest" if guest else "Play", exact=True).click()
    await page.wait_for_function("() => bg.state().screen === 'lobby'")
    return page


async def _tab(context: Any, url: str) -> Any:
    """A new tab of a browser context (one device) at `url`, its script errors kept."""
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    await page.goto(url)
    return page


async def _state(page: Any) -> dict[str, Any]:
    return dict(await page.evaluate("bg.state()"))


async def _wait_seq_change(page: Any, seq: int, timeout_ms: int = 8000) -> None:
    try:
        await page.wait_for_function("seq => bg.state().seq !== seq", arg=seq, timeout=timeout_ms)
    except Exception as exc:  # the opponent (or the CPU) is slow: look again
        if "Timeout" not in type(exc).__name__:
            raise


async def _click(locator: Any) -> bool:
    """Click what was just seen; False when it went away first (the page re-rendered on a
    rejoin, or a command resent after a reconnect moved the table on): look again."""
    try:
        await locator.click(timeout=5_000)
    except Exception as exc:
        if "Timeout" not in type(exc).__name__:
            raise
        return False
    return True


async def _act(page: Any) -> bool:
    """Make one move as a person would, by clicking; False when it is not this page's turn."""
    st = await _state(page)
    if not st["myTurn"]:
        return False
    roll = page.locator('[data-action="roll"]')
    if await roll.count():
        if await _click(roll):
            await _wait_seq_change(page, st["seq"])
        return True
    movable = page.locator("[data-movable]")
    if await movable.count():
        if await _click(movable.first):
            target = page.locator("[data-target]")
            if await target.count() and await _click(target.first):
                await _wait_seq_change(page, st["seq"])
        return True
    confirm = page.locator('[data-action="confirm"]')
    if await confirm.count():
        if await _click(confirm):
            await _wait_seq_change(page, st["seq"])
        return True
    return False


async def _play_until_over(page: Any, budget_s: float = 240) -> dict[str, Any]:
    end = time.monotonic() + budget_s
    while time.monotonic() < end:
        st = await _state(page)
        if st["phase"] in OVER:
            return st
        if not await _act(page):
            await _wait_seq_change(page, st["seq"], 3000)
    raise AssertionError(f"the match did not end in {budget_s} s: {await _state(page)}")


async def _create_and_invite(page: Any) -> str:
    """Create a table from the lobby (the form's defaults: casual); its invite link."""
    await page.get_by_role("button", name="Create", exact=True).click()
    await page.wait_for_function("() => bg.state().screen === 'waiting'")
    return str(await page.locator("#invite-link").input_value())


async def _in_table(page: Any) -> None:
    await page.wait_for_function("() => bg.state().screen === 'table' && bg.state().seq > 0")


async def _verify_dice(page: Any) -> str:
    await page.get_by_role("button", name="Verify the dice").click()
    await page.wait_for_function("() => /^[✓✗]/.test(bg.state().verify)")
    return str((await _state(page))["verify"])
