"""A server interceptor's one move: the method's handler with its behaviour wrapped (whichever
of gRPC's four kinds it is). grpc.aio keeps what an interceptor returns for a method for the
server's life, so a wrapper decides at each call, never the interceptor once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

KINDS = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")


def wrapped(
    handler: grpc.RpcMethodHandler[Any, Any], wrap: Callable[[str, Any], Any]
) -> grpc.RpcMethodHandler[Any, Any]:
    """`handler` with its behaviour replaced by `wrap(kind, behaviour)`."""
    for kind in KINDS:
        behaviour = getattr(handler, kind)
        if behaviour is not None:
            return handler._replace(**{kind: wrap(kind, behaviour)})  # type: ignore[attr-defined, no-any-return]
    return handler
