"""The gateway serves the browser client's files, and nothing else, on its WebSocket port."""

from __future__ import annotations

from pathlib import Path

from websockets.datastructures import Headers
from websockets.http11 import Request

from services.common.static_files import StaticFiles
from services.gateway.app import WEB_DIR


def _get(files: StaticFiles, path: str, **headers: str) -> tuple[int, Headers, bytes] | None:
    response = files(None, Request(path, Headers(headers)))
    if response is None:
        return None
    return response.status_code, response.headers, bytes(response.body)


def test_serves_the_client_with_its_type_and_a_strict_policy() -> None:
    files = StaticFiles(WEB_DIR)
    status, headers, body = _get(files, "/") or (0, Headers(), b"")
    assert status == 200 and b"<title>Backgammon</title>" in body
    assert headers["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    status, headers, _ = _get(files, "/app.js?v=1") or (0, Headers(), b"")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")


def test_the_page_has_an_icon() -> None:
    """Issue 27, item 10: a browser asks for /favicon.ico (it was a 404 on every page load)."""
    status, headers, body = _get(StaticFiles(WEB_DIR), "/favicon.ico") or (0, Headers(), b"")
    assert status == 200 and headers["Content-Type"] == "image/x-icon"
    assert body[:4] == b"\x00\x00\x01\x00"  # an ICO file's header


def test_a_websocket_upgrade_goes_through_to_the_api() -> None:
    assert _get(StaticFiles(WEB_DIR), "/", Upgrade="websocket", Connection="Upgrade") is None


def test_nothing_outside_the_client_is_served(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<p>hi</p>")
    (tmp_path / "secret.env").write_text("BG_TOKEN_SECRET=x")  # not a client file type
    files = StaticFiles(tmp_path)
    for path in (
        "/secret.env",
        "/../static_files.py",
        "/%2e%2e/app.py",
        "/nope.js",
        "//etc/passwd",
    ):
        found = _get(files, path)
        assert found is not None and found[0] == 404, path
    assert (_get(files, "/index.html") or (0,))[0] == 200
