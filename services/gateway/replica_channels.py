"""A channel to each table replica by its address, made on first use and kept: the lines that
carry a table's commands to its owner (services/gateway/command_lines.py) and the table's reads
(services/gateway/table_reads.py) share them, so a gateway holds one connection per replica
whatever it sends there."""

from __future__ import annotations

from collections.abc import Callable

import grpc

from bg.table.v1 import table_pb2_grpc

Connect = Callable[[str], grpc.aio.Channel]


class ReplicaChannels:
    def __init__(self, connect: Connect) -> None:
        self.connect = connect
        self._open: dict[str, tuple[grpc.aio.Channel, table_pb2_grpc.TableServiceAsyncStub]] = {}

    def channel(self, address: str) -> grpc.aio.Channel:
        return self._opened(address)[0]

    def stub(self, address: str) -> table_pb2_grpc.TableServiceAsyncStub:
        return self._opened(address)[1]

    def _opened(
        self, address: str
    ) -> tuple[grpc.aio.Channel, table_pb2_grpc.TableServiceAsyncStub]:
        found = self._open.get(address)
        if found is None:
            channel = self.connect(address)
            found = self._open[address] = (channel, table_pb2_grpc.TableServiceStub(channel))
        return found

    async def close(self) -> None:
        for channel, _ in self._open.values():
            await channel.close(None)
        self._open.clear()
