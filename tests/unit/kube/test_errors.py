"""The API error tree and the translation of transport exceptions at the boundary."""

from __future__ import annotations

import json

import aiohttp
import pytest
from kubernetes.aio.client.exceptions import ApiException

from computedomain.kube import errors


def _status(code: int, reason: str, message: str = "m", **details: object) -> bytes:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
    body.update({"reason": reason, "message": message})
    if details:
        body["details"] = details
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("status", "reason", "cls"),
    [
        (400, "BadRequest", errors.ApiClientError),
        (401, "Unauthorized", errors.Unauthorized),
        (403, "Forbidden", errors.Forbidden),
        (404, "NotFound", errors.NotFound),
        (409, "Conflict", errors.Conflict),
        (409, "AlreadyExists", errors.AlreadyExists),
        (410, "Expired", errors.Gone),
        (422, "Invalid", errors.Invalid),
        (429, "TooManyRequests", errors.TooManyRequests),
        (500, "InternalError", errors.ApiServerError),
        (503, "ServiceUnavailable", errors.ApiServerError),
    ],
    ids=lambda v: str(v) if not isinstance(v, type) else v.__name__,
)
def test_status_picks_most_specific_class(status: int, reason: str, cls: type) -> None:
    err = errors.from_response(status, _status(status, reason, "the words"))
    assert type(err) is cls
    assert err.status == status
    assert err.reason == reason
    assert err.message == "the words"
    assert err.body is not None
    assert err.body["code"] == status


def test_hierarchy_lets_callers_catch_broadly() -> None:
    assert issubclass(errors.AlreadyExists, errors.Conflict)
    assert issubclass(errors.Conflict, errors.ApiClientError)
    assert issubclass(errors.ApiServerError, errors.ApiError)
    assert issubclass(errors.ApiConnectionError, errors.ApiError)
    assert not issubclass(errors.ApiConnectionError, errors.ApiClientError)


def test_invalid_exposes_field_causes() -> None:
    cause = {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.x"}
    err = errors.from_response(422, _status(422, "Invalid", "bad", causes=[cause]))
    assert isinstance(err, errors.Invalid)
    assert err.causes == [cause]


def test_retry_after_from_header_wins_over_details() -> None:
    err = errors.from_response(
        429, _status(429, "TooManyRequests", retryAfterSeconds=7), {"Retry-After": "2"}
    )
    assert err.retry_after == 2.0
    err = errors.from_response(429, _status(429, "TooManyRequests", retryAfterSeconds=7))
    assert err.retry_after == 7.0
    assert errors.from_response(500, _status(500, "InternalError")).retry_after is None


def test_non_json_body_becomes_message() -> None:
    err = errors.from_response(502, b"<html>bad gateway</html>", http_reason="Bad Gateway")
    assert isinstance(err, errors.ApiServerError)
    assert err.reason == "Bad Gateway"
    assert "bad gateway" in err.message
    assert err.body is None


def test_watch_status_object_410_is_gone() -> None:
    err = errors.from_status_object(
        {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
    )
    assert isinstance(err, errors.Gone)
    assert "too old" in err.message


def test_translated_maps_client_api_exception_with_cause() -> None:
    exc = ApiException(status=404, reason="Not Found")
    exc.body = _status(404, "NotFound", 'pods "x" not found').decode()
    with pytest.raises(errors.NotFound) as info, errors.translated("GET x"):
        raise exc
    assert info.value.__cause__ is exc
    assert info.value.message == 'pods "x" not found'


def test_translated_maps_transport_failures_to_connection_error() -> None:
    original = aiohttp.ClientConnectionError("connection refused")
    with pytest.raises(errors.ApiConnectionError) as info, errors.translated("GET /api"):
        raise original
    assert info.value.status == 0
    assert info.value.__cause__ is original
    assert "GET /api" in info.value.message


def test_translated_leaves_own_errors_and_others_alone() -> None:
    own = errors.Conflict(409, "Conflict", "x")
    with pytest.raises(errors.Conflict) as info, errors.translated():
        raise own
    assert info.value is own
    with pytest.raises(KeyError), errors.translated():
        raise KeyError("unrelated")
