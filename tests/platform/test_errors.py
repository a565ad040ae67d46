"""Typed errors travel as gRPC's rich status (google.rpc.Status in `grpc-status-details-bin`):
an ErrorInfo any gRPC client reads, the typed bg.common.v1.Error ours read; api-v1's trailer is
still sent and still read for one release."""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from bg.common.v1 import errors_pb2
from services.common.errors import InvalidArgument, ServiceError, rich_status
from wire.errors import DOMAIN, ERROR_KEY, STATUS_KEY, error_from


def failed(*trailers: tuple[str, bytes]) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.aio.Metadata(),
        grpc.aio.Metadata(*trailers),
        details="INSUFFICIENT_FUNDS: bob cannot cover 100",
        debug_error_string="",
    )


def funds() -> ServiceError:
    return ServiceError("INSUFFICIENT_FUNDS", "bob cannot cover 100", players="bob")


def test_the_rich_status_carries_an_error_info_any_client_reads() -> None:
    status = rich_status(InvalidArgument("INVALID_AMOUNT", "amount must be > 0", field="amount"))
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert status.message == "INVALID_AMOUNT: amount must be > 0"
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert (info.reason, info.domain, dict(info.metadata)) == (
        "INVALID_AMOUNT",
        DOMAIN,
        {"field": "amount"},
    )


def test_error_from_reads_the_typed_detail_of_the_rich_status() -> None:
    err = funds()
    err.rejection = errors_pb2.REJECTION_CODE_CANNOT_COVER
    got = error_from(failed((STATUS_KEY, rich_status(err).SerializeToString())))
    assert got is not None
    assert (got.code, got.message, dict(got.metadata), got.rejection) == (
        "INSUFFICIENT_FUNDS",
        "bob cannot cover 100",
        {"players": "bob"},
        errors_pb2.REJECTION_CODE_CANNOT_COVER,
    )


def test_error_from_builds_the_error_from_an_error_info_alone() -> None:
    """A status from a server that sends only the standard detail."""
    info = error_details_pb2.ErrorInfo(reason="UNKNOWN_CODE", domain="elsewhere")
    info.metadata.update({"field": "code", "hint": "six letters"})
    packed = any_pb2.Any()
    packed.Pack(info)
    status = status_pb2.Status(code=9, message="UNKNOWN_CODE: no such table", details=[packed])
    got = error_from(failed((STATUS_KEY, status.SerializeToString())))
    assert got is not None
    assert (got.code, got.message, got.field, dict(got.metadata)) == (
        "UNKNOWN_CODE",
        "no such table",
        "code",
        {"hint": "six letters"},
    )


def test_error_from_still_reads_the_api_v1_trailer_and_nothing_is_none() -> None:
    old = funds().to_proto()
    got = error_from(failed((ERROR_KEY, old.SerializeToString())))
    assert got == old
    assert error_from(failed()) is None
