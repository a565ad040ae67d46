"""A gevent-friendly gRPC client for Locust: every call is reported to Locust's statistics
(as in Locust's own gRPC example), plus helpers to report correctness counters and timings as
named entries that Locust aggregates across worker processes."""

from __future__ import annotations

import time
from typing import Any

import grpc
from grpc_interceptor import ClientInterceptor

# Refusals by the rules that a client waits out and tries again (W-1: one wagered match at a
# time): answers, counted by the users as checks, not errors of the cluster.
RULE_REFUSALS = ("IN_ANOTHER_MATCH",)


def rule_refusal(exc: BaseException | None) -> bool:
    details = str(exc.details() or "") if isinstance(exc, grpc.RpcError) else ""
    return any(code in details for code in RULE_REFUSALS)


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
            self.env.events.request.fire(
                request_type="grpc", name=call_details.method, response_time=elapsed_ms,
                response_length=0, context={},
                exception=None if rule_refusal(exception) else exception,
            )  # fmt: skip
        if exception is not None:
            raise exception
        return response


def report(
    env: Any, kind: str, name: str, value_ms: float = 0.0, failure: str | None = None
) -> None:
    """A named entry in Locust's stats: counters (`failure` set: counted as a failure) and
    timings (value_ms)."""
    env.events.request.fire(
        request_type=kind, name=name, response_time=value_ms, response_length=0,
        exception=RuntimeError(failure) if failure else None, context={},
    )  # fmt: skip
