"""Small helpers shared by integration tests."""

from __future__ import annotations

import asyncio
import urllib.request
from typing import Any


async def scrape_metrics(port: int) -> str:
    """The Prometheus text a service exports on `port` (fetched off the event loop)."""

    def fetch() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            return str(reply.read().decode())

    return await asyncio.to_thread(fetch)


def kind(event: Any) -> str:
    """A TableEvent's type: the name of its `body` oneof field ("dice_rolled", ...)."""
    return str(event.WhichOneof("body"))
