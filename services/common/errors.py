"""Typed service errors: a stable code, the gRPC status, and what the error is about.

A servicer raises `ServiceError`; `grpc_errors` turns it into the gRPC status and the typed
error's trailers, whose wire format (gRPC's rich status, api-v1's trailer) is wire/errors.py
(below the platform: the clients read it with nothing of the services). Peers
read it back with `error_from`/`remote_call`. A refused call has changed nothing.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from google.rpc import status_pb2  # type: ignore[import-untyped]  # see wire/errors.py
from redis import exceptions as redis_errors
from sqlalchemy import exc as sql_errors

from bg.common.v1 import errors_pb2

# ERROR_KEY, STATUS_KEY and error_from are re-exported for the services and their tests.
from wire.errors import ERROR_KEY as ERROR_KEY
from wire.errors import STATUS_KEY as STATUS_KEY
from wire.errors import error_from as error_from
from wire.errors import rich_status as _rich_status
from wire.errors import trailers

# Error texts are cut to this length: no error may echo unbounded input into trailers.
MAX_MESSAGE = 300
T = TypeVar("T")


class ServiceError(Exception):
    status = grpc.StatusCode.FAILED_PRECONDITION

    def __init__(
        self,
        code: str,
        message: str,
        *,
        field: str = "",
        status: grpc.StatusCode | None = None,
        **metadata: str,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.metadata = metadata
        if status is not None:
            self.status = status

    rejection: Any = 0  # bg.common.v1.RejectionCode when the rules engine refused a command

    @classmethod
    def from_proto(cls, detail: errors_pb2.Error, status: grpc.StatusCode) -> ServiceError:
        """The error another service sent (its typed detail and the call's status)."""
        err = cls(detail.code, detail.message, field=detail.field, status=status)
        err.metadata = dict(detail.metadata)
        err.rejection = detail.rejection
        return err

    def to_proto(self) -> errors_pb2.Error:
        return errors_pb2.Error(
            code=self.code[:64],
            message=_cut(self.message),
            field=self.field[:64],
            metadata={k[:64]: _cut(v) for k, v in list(self.metadata.items())[:16]},
            rejection=self.rejection,
        )


def _cut(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


class InvalidArgument(ServiceError):
    status = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(ServiceError):
    status = grpc.StatusCode.NOT_FOUND


class Conflict(ServiceError):
    status = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(ServiceError):
    status = grpc.StatusCode.PERMISSION_DENIED


class Unauthenticated(ServiceError):
    status = grpc.StatusCode.UNAUTHENTICATED


class Unavailable(ServiceError):
    """A store or a peer is down: retryable, and nothing was changed."""

    status = grpc.StatusCode.UNAVAILABLE


def infrastructure_failure(exc: BaseException) -> ServiceError | None:
    """A failure of Redis, SQL or the network as the retryable UNAVAILABLE it is (a call must
    never fail as UNKNOWN because Valkey restarted), or None for anything else."""
    if isinstance(exc, ServiceError):
        return None
    if isinstance(exc, redis_errors.OutOfMemoryError) or (
        isinstance(exc, redis_errors.ResponseError) and str(exc).startswith("OOM")
    ):  # redis-py strips the OOM code off the message of the OutOfMemoryError it raises
        return Unavailable("STORE_FULL", "the table store is out of memory; try again later")
    if isinstance(exc, _REDIS_NOT_READY):
        return Unavailable("STORE_UNAVAILABLE", "the table store is unavailable; try again")
    if isinstance(exc, sql_errors.OperationalError | sql_errors.InterfaceError) or (
        isinstance(exc, sql_errors.DBAPIError)
        and (exc.connection_invalidated or _not_ready(sqlstate(exc)))
    ):
        return Unavailable("LEDGER_UNAVAILABLE", "the database is unavailable; try again")
    if isinstance(exc, ConnectionError | TimeoutError):
        return Unavailable("UNAVAILABLE", "a dependency is unavailable; try again")
    return None


# Redis/Valkey that cannot be reached or is not serving yet: a lost connection or a timeout,
# LOADING its append-only file (BusyLoadingError is a ConnectionError), a cluster without a
# primary for the slot (CLUSTERDOWN, MASTERDOWN, a slot not covered), TRYAGAIN while a slot
# moves, READONLY from a primary demoted in a failover.
_REDIS_NOT_READY = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.ClusterDownError,
    redis_errors.TryAgainError,
    redis_errors.ReadOnlyError,
    redis_errors.SlotNotCoveredError,
)
# SQLSTATEs of a server that cannot be reached or is not (yet) accepting work: a restart, a
# crash recovery, a failover, too many connections. asyncpg raises them as PostgresError
# subclasses, which SQLAlchemy wraps in a plain DBAPIError (connection_invalidated False): the
# code is what tells them from a refused statement.
_NOT_READY_CLASSES = ("08",)  # connection exception
_NOT_READY = frozenset(
    {
        "57P01",  # admin_shutdown
        "57P02",  # crash_shutdown
        "57P03",  # cannot_connect_now: starting up, in recovery
        "57P05",  # idle_session_timeout
        "53300",  # too_many_connections
        "25006",  # read_only_sql_transaction: a standby after a failover
    }
)


def sqlstate(exc: BaseException) -> str:
    """The SQLSTATE a database error carries (asyncpg's, through SQLAlchemy's wrapping), or ""."""
    for err in (exc, getattr(exc, "orig", None), getattr(exc, "__cause__", None)):
        code = getattr(err, "sqlstate", None) or getattr(err, "pgcode", None)
        if isinstance(code, str):
            return code
    return ""


def _not_ready(code: str) -> bool:
    return code in _NOT_READY or code.startswith(_NOT_READY_CLASSES)


def rich_status(err: ServiceError) -> status_pb2.Status:
    """gRPC's rich status of `err`: ErrorInfo for any client, the typed Error for ours."""
    return _rich_status(err.status.value[0], err.to_proto())


async def abort(context: grpc.aio.ServicerContext[Any, Any], err: ServiceError) -> None:
    detail = err.to_proto()
    status = _rich_status(err.status.value[0], detail)
    context.set_trailing_metadata(trailers(status, detail))
    await context.abort(err.status, status.message)


def grpc_errors(
    method: Callable[..., Awaitable[T]],
) -> Callable[..., Awaitable[T]]:
    """Decorate a servicer method: ServiceError -> status code + typed details; a store or
    network failure -> UNAVAILABLE (retryable)."""

    @functools.wraps(method)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> T:
        try:
            return await method(self, request, context)
        except ServiceError as err:
            await abort(context, err)
            raise AssertionError("unreachable: abort raises") from None
        except Exception as exc:
            mapped = infrastructure_failure(exc)
            if mapped is None:
                raise
            await abort(context, mapped)
            raise AssertionError("unreachable: abort raises") from None

    return wrapper


async def remote_call(awaitable: Awaitable[T]) -> T:
    """Await a call to another service, turning its typed error back into a ServiceError (and a
    failure without one into UPSTREAM_UNAVAILABLE with the transport's status)."""
    try:
        return await awaitable
    except grpc.aio.AioRpcError as exc:
        detail = error_from(exc)
        if detail is None:
            raise ServiceError(
                "UPSTREAM_UNAVAILABLE",
                _cut(f"{exc.code().name}: {exc.details()}"),
                status=exc.code(),
            ) from None
        raise ServiceError.from_proto(detail, exc.code()) from None


def home_replica(key: str, replicas: int) -> int:
    """Which of `replicas` lines a key (a table id) takes first: the same every time, so a
    table's commands meet one replica's state cache."""
    return zlib.crc32(key.encode()) % replicas
