"""How a typed error travels on a failed gRPC call: what every party of the wire reads and
writes, the services (services/common/errors.py) and the clients (client/) alike.

A refused call carries gRPC's rich status, a `google.rpc.Status` in the trailing metadata key
`grpc-status-details-bin`, with two details: an `ErrorInfo` (reason = the code, domain
"bgcluster", the metadata and the field) that any gRPC client library reads, and the typed
`bg.common.v1.Error` (with the rules engine's rejection). API release api-v2 also still sends
the `bg.common.v1.Error` alone in `bg-error-bin`, the trailer api-v1 read; api-v3 drops it
(protos/releases/CHANGES.md). Pure protobuf: no transport, so a client needs nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from google.protobuf import any_pb2

# googleapis-common-protos ships .pyi files but no py.typed marker, and types-protobuf's
# google-stubs (google.protobuf only) keep mypy from reading them: untyped here.
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from bg.common.v1 import errors_pb2

STATUS_KEY = "grpc-status-details-bin"  # gRPC's rich status
ERROR_KEY = "bg-error-bin"  # api-v1's trailer: sent and read until api-v3
DOMAIN = "bgcluster"  # ErrorInfo.domain of every error the services raise


class FailedCall(Protocol):
    """A failed call as every gRPC library shows it (grpc.aio.AioRpcError among them)."""

    def trailing_metadata(self) -> Any: ...


def rich_status(code: int, detail: errors_pb2.Error) -> status_pb2.Status:
    """The rich status of a refusal with gRPC status `code` (its number) and typed `detail`."""
    info = error_details_pb2.ErrorInfo(reason=detail.code, domain=DOMAIN)
    info.metadata.update(detail.metadata)
    if detail.field:
        info.metadata["field"] = detail.field
    details = []
    for message in (info, detail):
        packed = any_pb2.Any()
        packed.Pack(message)
        details.append(packed)
    text = f"{detail.code}: {detail.message}"
    return status_pb2.Status(code=code, message=text, details=details)


def trailers(status: status_pb2.Status, detail: errors_pb2.Error) -> tuple[tuple[str, bytes], ...]:
    """The trailing metadata a refusal sends: the rich status, and api-v1's trailer."""
    return ((STATUS_KEY, status.SerializeToString()), (ERROR_KEY, detail.SerializeToString()))


def error_from(failed: FailedCall) -> errors_pb2.Error | None:
    """The typed error a failed call carried, if any: from its rich status (the typed detail,
    else one built from an ErrorInfo), else from api-v1's trailer."""
    return error_in(failed.trailing_metadata() or ())


def error_in(metadata: Iterable[tuple[str, Any]]) -> errors_pb2.Error | None:
    """The typed error in a call's trailing metadata, if any (see error_from)."""
    found = dict((k, v) for k, v in metadata if isinstance(v, bytes))
    if STATUS_KEY in found:
        status = status_pb2.Status()
        status.ParseFromString(found[STATUS_KEY])
        return _typed(status)
    if ERROR_KEY in found:
        err = errors_pb2.Error()
        err.ParseFromString(found[ERROR_KEY])
        return err
    return None


def _typed(status: status_pb2.Status) -> errors_pb2.Error | None:
    info: error_details_pb2.ErrorInfo | None = None
    for packed in status.details:
        if packed.Is(errors_pb2.Error.DESCRIPTOR):
            err = errors_pb2.Error()
            packed.Unpack(err)
            return err
        if packed.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            packed.Unpack(info)
    if info is None:
        return None
    meta = dict(info.metadata)
    field = meta.pop("field", "")
    message = status.message.removeprefix(f"{info.reason}: ")
    return errors_pb2.Error(code=info.reason, message=message, field=field, metadata=meta)
