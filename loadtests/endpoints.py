"""Where a load test sends its calls: a gateway (the players' API) and the operators' API, each
plaintext or TLS. With TLS the server's certificate is checked against `ca` (a PEM file; the
system's roots when empty) and the name `server_name` (the address's host when empty: an
Ingress reached by IP, or through a tunnel, names its certificate otherwise)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc


@dataclass(frozen=True)
class Endpoint:
    address: str  # HOST:PORT
    tls: bool = False
    ca: str = ""
    server_name: str = ""

    def options(self) -> list[tuple[str, Any]]:
        if self.tls and self.server_name:
            return [("grpc.ssl_target_name_override", self.server_name)]
        return []

    def credentials(self) -> grpc.ChannelCredentials:
        roots = Path(self.ca).read_bytes() if self.ca else None
        return grpc.ssl_channel_credentials(root_certificates=roots)

    def channel(self, options: list[tuple[str, Any]] | None = None) -> grpc.Channel:
        """A blocking channel (Locust's users: gevent patches its waits)."""
        opts = [*self.options(), *(options or [])]
        if self.tls:
            return grpc.secure_channel(self.address, self.credentials(), options=opts)
        return grpc.insecure_channel(self.address, options=opts)

    def aio_channel(self) -> grpc.aio.Channel:
        """An asyncio channel (the runner's checks and its ledger summary)."""
        if self.tls:
            return grpc.aio.secure_channel(self.address, self.credentials(), self.options())
        return grpc.aio.insecure_channel(self.address, self.options())

    def described(self) -> str:
        if not self.tls:
            return f"{self.address} (plaintext)"
        name = f", name {self.server_name}" if self.server_name else ""
        return f"{self.address} (TLS, {'CA ' + self.ca if self.ca else 'system roots'}{name})"
