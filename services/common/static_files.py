"""A web page's files, served on the WebSocket port it talks to: the browser client by the
gateway (services/gateway/web/), the operators' console by the identity service
(services/identity/console/).

A browser loads `http://<host>:<ws port>/` and opens its WebSocket to the same origin, so the
page needs no configuration and the Content-Security-Policy can say `'self'` for everything.
Only the files present in its directory when the server starts are served (read once into memory: a
request can never name a path outside them); every other plain HTTP request is a 404, and a
WebSocket upgrade goes on to the API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
    ".json": "application/json",
}
# The page runs only its own scripts and talks only to its own origin (ws: included by 'self'
# in CSP 3; spelled out for older engines); nothing may frame it (clickjacking a move).
SECURITY = {
    "Content-Security-Policy": (
        "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
        "style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


class StaticFiles:
    def __init__(self, root: Path) -> None:
        self.files: dict[str, tuple[str, bytes]] = {}
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in TYPES:
                name = "/" + path.relative_to(root).as_posix()
                self.files[name] = (TYPES[path.suffix], path.read_bytes())
        if "/index.html" in self.files:
            self.files["/"] = self.files["/index.html"]

    def __call__(self, connection: Any, request: Request) -> Response | None:
        """websockets' process_request hook: None lets a WebSocket handshake through."""
        if "websocket" in request.headers.get("Upgrade", "").lower():
            return None
        path = request.path.split("?", 1)[0].split("#", 1)[0]
        found = self.files.get(path)
        if found is None:
            return _response(404, "Not Found", "text/plain; charset=utf-8", b"not found\n")
        content_type, body = found
        return _response(200, "OK", content_type, body)


def _response(status: int, reason: str, content_type: str, body: bytes) -> Response:
    headers = Headers(SECURITY)
    headers["Content-Type"] = content_type
    headers["Content-Length"] = str(len(body))
    return Response(status, reason, headers, body)
