"""What a player reads for an error code, in the terminal as in the browser: one table of
sentences (services/gateway/web/words.js, which docs/protocol.md's "What players read" is made
from), read once. The server's own message is for developers and is never shown to a player."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import grpc

from wire.errors import error_from

WORDS = Path(__file__).resolve().parents[1] / "services" / "gateway" / "web" / "words.js"
UNKNOWN = "Something went wrong: try again."


@cache
def says(table: str = "SAYS") -> dict[str, str]:
    text = WORDS.read_text()
    start = text.index(f"export const {table} = {{")
    body = text[start : text.index("};", start)]
    return dict(re.findall(r'^\s+([A-Za-z][A-Za-z_]+): "([^"]+)",$', body, flags=re.M))


def sentence(code: str) -> str:
    """The sentence for `code`; a code without one (a newer server) says so plainly."""
    return says().get(code, UNKNOWN)


def closed_sentence(reason: str) -> str:
    """Why a table closed before its match (the lobby's close_reason, "<why>[:<who>]")."""
    return says("CLOSED_SAYS").get(reason.split(":")[0], "The table closed.")


def code_of(err: grpc.aio.AioRpcError) -> str:
    found = error_from(err)
    return found.code if found is not None else ""


def refusal(err: grpc.aio.AioRpcError) -> str:
    """A failed call as a player reads it."""
    found = error_from(err)
    if found is None:
        unreachable = err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
        return sentence("UNAVAILABLE") if unreachable else UNKNOWN
    return sentence(found.code)
