"""The gRPC servicer of bg.gateway.v1.GatewayService: the gRPC transport of the gateway's
handlers (services/gateway/handlers.py), which the WebSocket calls too.

Each method reads who calls from the call (`caller_of`: its peer, its `authorization: Bearer`
and `x-service-credential` metadata), calls the handler of the same name, and turns a refusal
into the gRPC status with its typed error (`grpc_errors`); a stream's messages are written to
the call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, TypeVar

from bg.gateway.v1 import gateway_pb2, gateway_pb2_grpc
from services.common.errors import grpc_errors
from services.gateway.callers import Context, caller_of
from services.gateway.handlers import GROUPS, GatewayHandlers

T = TypeVar("T")
# Every unary method of the service: the handler of the same name (in its group) answers it.
UNARY_METHODS = tuple(name for group in GROUPS for name in group.UNARY)


def _serving(names: tuple[str, ...]) -> Any:
    """A class decorator: a gRPC method for each handler in `names`."""

    def decorate(cls: type[T]) -> type[T]:
        for name in names:
            setattr(cls, name, _unary(name))
        return cls

    return decorate


def _unary(name: str) -> Any:
    @grpc_errors
    async def method(self: GatewayServicer, request: Any, context: Context) -> Any:
        return await self.handlers.unary[name](request, caller_of(context))

    method.__name__ = method.__qualname__ = name
    return method


@_serving(UNARY_METHODS)
class GatewayServicer(gateway_pb2_grpc.GatewayServiceServicer):
    def __init__(self, handlers: GatewayHandlers) -> None:
        self.handlers = handlers

    @grpc_errors
    async def Play(  # type: ignore[override]  # grpc.aio: written to the context, not yielded
        self, request_iterator: AsyncIterator[gateway_pb2.PlayRequest], context: Context
    ) -> None:
        await self.handlers.Play(request_iterator, caller_of(context), context.write)

    @grpc_errors
    async def Watch(  # type: ignore[override]  # grpc.aio: written to the context, not yielded
        self, request: gateway_pb2.WatchRequest, context: Context
    ) -> None:
        await self.handlers.Watch(request, caller_of(context), context.write)

    @grpc_errors
    async def Friends(  # type: ignore[override]  # grpc.aio: written to the context, not yielded
        self, request: gateway_pb2.GetFriendsRequest, context: Context
    ) -> None:
        await self.handlers.Friends(request, caller_of(context), context.write)
