"""The operators' console's server (issue 61, item 5; services/identity/console.py): on its own
port the identity service serves the console's page (its own scripts only) and a WebSocket that
carries the admin API's calls with the operator's token, exactly as the API takes them: a wrong
key, a missing or limited token, a malformed message and a call that is not the operators' are
refused in the API's typed words, and a refused call is audited as the API audits it."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.identity.hosts import ADMIN, LOADER, identity_host

pytestmark = pytest.mark.integration


@pytest.fixture
async def console(tmp_path: Path, valkey_url: str) -> AsyncIterator[int]:
    async with identity_host(tmp_path, valkey_url) as host:
        yield host.app.ports["console"]


async def _ask(ws: Any, request_id: Any, method: Any, request: Any, token: str = "") -> Any:
    await ws.send(
        json.dumps({"id": request_id, "method": method, "request": request, "token": token})
    )
    return json.loads(await ws.recv())


def _get(port: int, path: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


async def test_the_console_page_is_served_with_its_own_scripts_only(console: int) -> None:
    status, headers, body = await asyncio.to_thread(_get, console, "/")
    assert status == 200 and b"Operators' console" in body and b"console.js" in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert (await asyncio.to_thread(_get, console, "/console.js"))[0] == 200
    assert (await asyncio.to_thread(_get, console, "/../app.py"))[0] == 404


async def test_the_admin_api_over_the_consoles_websocket_with_the_apis_own_checks(
    console: int,
) -> None:
    async with connect(f"ws://127.0.0.1:{console}/") as ws:
        await ws.send("not json")
        assert json.loads(await ws.recv())["error"]["code"] == "MALFORMED"
        wrong = await _ask(ws, 1, "OperatorLogin", {"name": "admin", "key": "x" * 40})
        assert wrong == {"id": 1, "error": wrong["error"]}
        assert (wrong["error"]["status"], wrong["error"]["code"]) == (
            "UNAUTHENTICATED", "BAD_CREDENTIALS",
        )  # fmt: skip
        unknown = await _ask(ws, 2, "Login", {})  # a player's call is not the operators'
        assert (unknown["error"]["code"], unknown["error"]["field"]) == ("MALFORMED", "method")
        bad = await _ask(ws, 3, "ListAudit", {"limit": "many"})
        assert (bad["error"]["code"], bad["error"]["field"]) == ("MALFORMED", "request")
        anonymous = await _ask(ws, 4, "ListAudit", {})
        assert anonymous["error"]["code"] == "NO_TOKEN"
        login = await _ask(ws, "s5", "OperatorLogin", {"name": "loadtest", "key": LOADER})
        limited = login["response"]["token"]
        assert login["id"] == "s5" and login["response"]["rights"] == ["adjust", "lookup"]
        refused = await _ask(ws, 6, "ListAudit", {}, limited)
        assert (refused["error"]["status"], refused["error"]["code"]) == (
            "PERMISSION_DENIED", "NOT_ALLOWED",
        )  # fmt: skip
        admin = (await _ask(ws, 7, "OperatorLogin", {"name": "admin", "key": ADMIN}))["response"]
        audit = await _ask(ws, 8, "ListAudit", {"limit": 50}, admin["token"])
        rows = [
            (e["operator"], e["action"], e.get("outcome")) for e in audit["response"]["entries"]
        ]
        assert ("loadtest", "audit", "NOT_ALLOWED") in rows  # refused through the console: audited
        assert ("admin", "login", "ok") in rows
        # The token sent once is kept for the connection, as the gateway's WebSocket does.
        again = await _ask(ws, 9, "ListFlags", {"state": "sus"})
        assert again["error"]["code"] in ("INVALID_STATE", "UPSTREAM_UNAVAILABLE")
