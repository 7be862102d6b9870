"""Errors raised by the Kubernetes access layer, one class per way a request can fail.

Everything in :mod:`computedomain.kube` raises these and nothing else for API failures; the
foreign exceptions of the transport (``kubernetes`` client, ``aiohttp``, sockets) are translated
at the boundary by :func:`translated` and chained with ``raise ... from exc``, so callers never
import the HTTP library to handle a 404. The tree::

    ApiError                      status, reason, message, body, retry_after
    ├── ApiClientError            4xx: the request was wrong or not allowed
    │   ├── Unauthorized          401
    │   ├── Forbidden             403
    │   ├── NotFound              404
    │   ├── Conflict              409 (resourceVersion mismatch, failed precondition)
    │   │   └── AlreadyExists     409 with reason AlreadyExists
    │   ├── Gone                  410 (expired resourceVersion; also an in-stream watch ERROR)
    │   ├── Invalid               422, with .causes (field-level reasons)
    │   └── TooManyRequests       429 (server asks to retry after .retry_after)
    ├── ApiServerError            5xx: the server failed; usually worth retrying
    └── ApiConnectionError        status 0: no HTTP answer at all (refused, reset, timeout)

``Conflict`` and ``Gone`` are the two that controllers act on (re-read and retry; relist).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

import aiohttp
from kubernetes.aio.client import exceptions as aio_exceptions
from kubernetes.client import exceptions as sync_exceptions


class ApiError(Exception):
    """A request to the API server failed.

    ``status`` is the HTTP code (0 when there was no answer), ``reason`` the Status ``reason``
    (``NotFound``, ``Conflict``...) or HTTP reason phrase, ``message`` the server's words,
    ``body`` the decoded Status object if the server sent one, ``retry_after`` seconds the server
    asked us to wait (``Retry-After`` header or ``details.retryAfterSeconds``), if any.
    """

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else message)
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.retry_after = retry_after


class ApiClientError(ApiError):
    """4xx: the request was malformed, not allowed, or conflicts with current state."""


class ApiServerError(ApiError):
    """5xx: the server failed to handle a request (usually transient)."""


class ApiConnectionError(ApiError):
    """No HTTP answer: connection refused or reset, DNS failure, TLS failure, timeout."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "ConnectionError", message)


class Unauthorized(ApiClientError):
    """401: missing or bad credentials."""


class Forbidden(ApiClientError):
    """403: authenticated but not allowed (RBAC) or refused by admission."""


class NotFound(ApiClientError):
    """404: the object (or the resource type) does not exist."""


class Conflict(ApiClientError):
    """409: the object changed since it was read, or a delete precondition failed."""


class AlreadyExists(Conflict):
    """409 with reason AlreadyExists: a create found an object with that name."""


class Gone(ApiClientError):
    """410: the resourceVersion is too old to watch or list from; relist."""


class Invalid(ApiClientError):
    """422: the object failed validation. ``causes`` lists ``{reason, message, field}``."""

    @property
    def causes(self) -> list[dict[str, Any]]:
        details = (self.body or {}).get("details") or {}
        causes = details.get("causes") or []
        return [c for c in causes if isinstance(c, dict)]


class TooManyRequests(ApiClientError):
    """429: the server is shedding load; wait ``retry_after`` seconds before retrying."""


_BY_STATUS: dict[int, type[ApiError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_class(status: int, reason: str = "") -> type[ApiError]:
    """The most specific class for an HTTP status and Status reason. Pure."""
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExists
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if 400 <= status < 500:
        return ApiClientError
    if status >= 500:
        return ApiServerError
    if status == 0:
        return ApiConnectionError
    return ApiError


def from_response(
    status: int,
    data: bytes | str | None,
    headers: Mapping[str, str] | None = None,
    *,
    http_reason: str = "",
) -> ApiError:
    """Build the error for a non-2xx answer from its body and headers. Pure.

    A JSON ``Status`` body supplies reason, message and details; any other body (a proxy's HTML
    page, an empty answer) becomes the message as-is, truncated.
    """
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else (data or "")
    body: dict[str, Any] | None = None
    with contextlib.suppress(ValueError):
        decoded = json.loads(text) if text else None
        if isinstance(decoded, dict):
            body = decoded
    reason = str((body or {}).get("reason") or http_reason or "Unknown")
    message = str((body or {}).get("message") or text[:500] or http_reason or f"HTTP {status}")
    retry_after = _retry_after(headers, body)
    cls = error_class(status, reason)
    if cls is ApiConnectionError:  # a status-0 "response" only comes from the client library
        return ApiConnectionError(message)
    return cls(status, reason, message, body=body, retry_after=retry_after)


def from_status_object(status_obj: Mapping[str, Any]) -> ApiError:
    """The error for a ``Status`` object seen inside a watch stream (``type: ERROR``). Pure."""
    code = status_obj.get("code")
    status = code if isinstance(code, int) else 500
    reason = str(status_obj.get("reason") or "Unknown")
    message = str(status_obj.get("message") or f"watch error {status}")
    cls = error_class(status, reason)
    if cls is ApiConnectionError:
        return ApiConnectionError(message)
    return cls(status, reason, message, body=dict(status_obj))


def _retry_after(headers: Mapping[str, str] | None, body: Mapping[str, Any] | None) -> float | None:
    raw = headers.get("Retry-After") if headers else None
    if raw is not None:
        with contextlib.suppress(ValueError):
            return max(0.0, float(raw))
    details = (body or {}).get("details") or {}
    seconds = details.get("retryAfterSeconds") if isinstance(details, dict) else None
    if isinstance(seconds, int | float) and not isinstance(seconds, bool):
        return max(0.0, float(seconds))
    return None


@contextlib.contextmanager
def translated(what: str = "") -> Iterator[None]:
    """Turn the transport's exceptions into :class:`ApiError` subclasses, chained as the cause.

    ``what`` (e.g. ``"GET /api/v1/pods"``) is prefixed to connection-error messages. Our own
    :class:`ApiError` and cancellation pass through untouched.
    """
    prefix = f"{what}: " if what else ""
    try:
        yield
    except ApiError:
        raise
    except (aio_exceptions.ApiException, sync_exceptions.ApiException) as exc:
        status = int(getattr(exc, "status", 0) or 0)
        if status == 0:
            raise ApiConnectionError(f"{prefix}{exc.reason or exc}") from exc
        raise from_response(
            status, exc.body, exc.headers, http_reason=str(exc.reason or "")
        ) from exc
    except aiohttp.ClientResponseError as exc:
        raise from_response(exc.status, exc.message, exc.headers) from exc
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        detail = str(exc) or type(exc).__name__
        raise ApiConnectionError(f"{prefix}{detail}") from exc
