"""A gevent-friendly gRPC client for Locust: every call is reported to Locust's statistics
(as in Locust's own gRPC example), plus helpers to report correctness counters, timings and
refusals by code as named entries that Locust aggregates across worker processes."""

from __future__ import annotations

import time
from typing import Any

import grpc
from grpc_interceptor import ClientInterceptor

from loadtests.failures import LIMIT_KIND, RULE_KIND, code_of, kind_of


def rule_refusal(exc: BaseException | None) -> bool:
    """A refusal the rules make (W-1's wait, say): the client waits and tries again."""
    return exc is not None and kind_of(code_of(exc)) == RULE_KIND


class LocustInterceptor(ClientInterceptor):
    def __init__(self, environment: Any) -> None:
        self.env = environment

    def intercept(
        self, method: Any, request_or_iterator: Any, call_details: grpc.ClientCallDetails
    ) -> Any:
        started = time.perf_counter()
        exception = None
        response: Any = None
        try:
            response = method(request_or_iterator, call_details)
            if hasattr(response, "result") and not call_details.method.endswith("/Play"):
                response.result()  # unary: wait for it, so the timing is the call's
        except grpc.RpcError as exc:
            exception = exc
        elapsed_ms = (time.perf_counter() - started) * 1000
        if not call_details.method.endswith("/Play"):
            if (
                exception is None
                and hasattr(response, "exception")
                and response.exception() is not None
            ):
                exception = response.exception()
            name = call_details.method
            failure = None
            if exception is not None:
                refused(self.env, name.rsplit("/", 1)[-1], code_of(exception))
                failure = code_of(exception) if kind_of(code_of(exception)) == "error" else None
            self.env.events.request.fire(
                request_type="grpc",
                name=name,
                response_time=elapsed_ms,
                response_length=0,
                context={},
                exception=failure,
            )
        if exception is not None:
            raise exception
        return response


def refused(env: Any, what: str, code: str) -> None:
    """A refusal the rules make, or the gateway's rate limit: counted by its code in an entry
    of its own (an error is the failure of the call's or command's own entry)."""
    kind = kind_of(code)
    if kind in (RULE_KIND, LIMIT_KIND):
        env.events.request.fire(
            request_type=kind,
            name=f"{what} {code}",
            response_time=0,
            response_length=0,
            context={},
            exception=None,
        )


def report(
    env: Any, kind: str, name: str, value_ms: float = 0.0, failure: str | None = None
) -> None:
    """A named entry in Locust's stats: counters (`failure` set: counted as a failure) and
    timings (value_ms)."""
    env.events.request.fire(
        request_type=kind,
        name=name,
        response_time=value_ms,
        response_length=0,
        exception=failure,
        context={},
    )
