"""No call is served before the service has started: its database schema at its revision (the
SQL services migrate in a start hook), its background work running. The gRPC server listens
before the start hooks run, so that the health service answers NOT_SERVING while a migration
waits on PostgreSQL (a Kubernetes probe sees a live process, not a refused port); but clients
on a balanced channel do not ask the health service before a call, and were served by a
service whose tables did not exist yet (issue 58: the identity service's `ListBanned` answered
"relation "bans" does not exist" in 3 starts of 3 on PostgreSQL).

So until `open()`, every call but the health and reflection services' is answered
UNAVAILABLE `STARTING`: a balanced channel retries it on another replica, a client after a
moment, and nothing of the service runs for it."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from services.common.errors import Unavailable, abort
from services.common.handler_wrap import wrapped

ALWAYS = ("/grpc.health.", "/grpc.reflection.")  # answer while starting


class StartingGate(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Each handler checks the gate at each call (one attribute read): grpc.aio keeps the
    handler an interceptor returns (services/common/handler_wrap.py)."""

    def __init__(self) -> None:
        self.is_open = False

    def open(self) -> None:
        self.is_open = True

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any]]
        ],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any]:
        handler = await continuation(details)
        if handler is None or details.method.startswith(ALWAYS):
            return handler
        return wrapped(handler, self._gated)

    def _gated(self, kind: str, behaviour: Any) -> Any:
        if inspect.isasyncgenfunction(behaviour):  # a stream of yielded messages

            async def streamed(request: Any, context: Any) -> AsyncIterator[Any]:
                if not self.is_open:
                    await _refuse(context)
                async for message in behaviour(request, context):
                    yield message

            return streamed

        async def answered(request: Any, context: Any) -> Any:  # a unary answer, or writes
            if not self.is_open:
                await _refuse(context)
            return await behaviour(request, context)

        return answered


async def _refuse(context: grpc.aio.ServicerContext[Any, Any]) -> None:
    await abort(
        context,
        Unavailable("STARTING", "the service is starting (its schema or state is not ready yet)"),
    )
