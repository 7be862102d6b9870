"""Kubernetes ``Status`` error objects, worded the way kube-apiserver words them.

Every failure the embedded API server returns goes through :class:`ApiStatusError`, raised
by handlers, storage, admission and validation alike and turned into a JSON ``Status`` body
by the HTTP layer. ``kubectl`` prints ``message`` verbatim, so the wording here is part of
what the server is faithful to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs


@attrs.frozen
class FieldCause:
    """One field-level reason an object is invalid (``details.causes[]`` of a 422)."""

    reason: str  # FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, ...
    field: str  # dotted path, e.g. ``spec.channel.allocationMode``
    message: str  # e.g. ``Unsupported value: "x": supported values: "All", "Single"``

    def render(self) -> str:
        """The ``field: message`` form used inside a 422 ``message``."""
        return f"{self.field}: {self.message}" if self.field else self.message

    def to_json(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


def required(field: str) -> FieldCause:
    return FieldCause("FieldValueRequired", field, "Required value")


def invalid_value(field: str, value: Any, detail: str) -> FieldCause:
    return FieldCause("FieldValueInvalid", field, f"Invalid value: {_quote(value)}: {detail}")


def not_supported(field: str, value: Any, supported: Sequence[Any]) -> FieldCause:
    values = ", ".join(_quote(v) for v in supported)
    return FieldCause(
        "FieldValueNotSupported",
        field,
        f"Unsupported value: {_quote(value)}: supported values: {values}",
    )


def duplicate(field: str, value: Any) -> FieldCause:
    return FieldCause("FieldValueDuplicate", field, f"Duplicate value: {_quote(value)}")


def forbidden_field(field: str, detail: str) -> FieldCause:
    return FieldCause("FieldValueForbidden", field, f"Forbidden: {detail}")


def type_invalid(field: str, value: Any, expected: str) -> FieldCause:
    return FieldCause(
        "FieldValueTypeInvalid",
        field,
        f"Invalid value: {_quote(value)}: {field.rsplit('.', 1)[-1]} in body must be of type "
        f"{expected}: {_quote(_json_type(value))}",
    )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _quote(value: Any) -> str:
    """Go's ``%q``-like rendering used by apimachinery field errors."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    return str(value)


class ApiStatusError(Exception):
    """A failed request, carrying everything needed to render a ``Status`` body."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        name: str | None = None,
        group: str | None = None,
        kind: str | None = None,
        causes: Sequence[FieldCause] = (),
        retry_after_seconds: int | None = None,
        empty_details: bool = False,
    ) -> None:
        super().__init__(message)
        # kube-apiserver's generic responses (NewGenericServerResponse) carry "details": {}
        self.empty_details = empty_details
        self.code = code
        self.reason = reason
        self.message = message
        self.name = name
        self.group = group
        self.kind = kind
        self.causes = tuple(causes)
        self.retry_after_seconds = retry_after_seconds

    def to_status(self) -> dict[str, Any]:
        """The JSON ``Status`` object (``kind: Status``, ``apiVersion: v1``)."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details: dict[str, Any] = {}
        if self.name is not None:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind is not None:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.to_json() for c in self.causes]
        if self.retry_after_seconds is not None:
            details["retryAfterSeconds"] = self.retry_after_seconds
        if details or self.empty_details:
            body["details"] = details
        return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiStatusError:
    return ApiStatusError(
        404,
        "NotFound",
        f'{_qualified(resource, group)} "{name}" not found',
        name=name,
        group=group,
        kind=resource,
    )


def already_exists(resource: str, group: str, name: str) -> ApiStatusError:
    return ApiStatusError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        name=name,
        group=group,
        kind=resource,
    )


def conflict(resource: str, group: str, name: str, detail: str | None = None) -> ApiStatusError:
    detail = detail or (
        "the object has been modified; please apply your changes to the latest version "
        "and try again"
    )
    return ApiStatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {detail}',
        name=name,
        group=group,
        kind=resource,
    )


def invalid(kind: str, group: str, name: str, causes: Sequence[FieldCause]) -> ApiStatusError:
    """422 Invalid: ``<Kind>.<group> "<name>" is invalid: <cause>, <cause>``."""
    qualified = f"{kind}.{group}" if group else kind
    rendered = [c.render() for c in causes]
    summary = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    return ApiStatusError(
        422,
        "Invalid",
        f'{qualified} "{name}" is invalid: {summary}',
        name=name,
        group=group,
        kind=kind,
        causes=causes,
    )


def bad_request(message: str) -> ApiStatusError:
    return ApiStatusError(400, "BadRequest", message)


def forbidden(
    message: str, *, resource: str = "", group: str = "", name: str = ""
) -> ApiStatusError:
    return ApiStatusError(
        403, "Forbidden", message, name=name or None, group=group, kind=resource or None
    )


def unauthorized() -> ApiStatusError:
    return ApiStatusError(401, "Unauthorized", "Unauthorized")


def gone(message: str) -> ApiStatusError:
    """410 Expired: the watch or list window moved past the requested resourceVersion."""
    return ApiStatusError(410, "Expired", message)


def method_not_allowed(message: str) -> ApiStatusError:
    return ApiStatusError(405, "MethodNotAllowed", message)


def unsupported_media_type(
    content_type: str, accepted: Sequence[str] | None = None
) -> ApiStatusError:
    """415 for a body (or patch) type the endpoint does not accept."""
    types = ", ".join(
        accepted
        or (
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        )
    )
    return ApiStatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {types}",
    )


def request_entity_too_large(limit: int) -> ApiStatusError:
    return ApiStatusError(
        413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}"
    )


def too_many_requests(retry_after_seconds: int) -> ApiStatusError:
    return ApiStatusError(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        retry_after_seconds=retry_after_seconds,
    )


def invalid_patch_options(
    field: str, detail: str, reason: str = "FieldValueInvalid"
) -> ApiStatusError:
    """422 for bad PatchOptions (e.g. an apply without ``fieldManager``: reason
    ``FieldValueRequired``)."""
    return ApiStatusError(
        422,
        "Invalid",
        f'PatchOptions.meta.k8s.io "" is invalid: {field}: {detail}',
        group="meta.k8s.io",
        kind="PatchOptions",
        causes=[FieldCause(reason, field, detail)],
    )


def internal_error(message: str) -> ApiStatusError:
    return ApiStatusError(500, "InternalError", f"Internal error occurred: {message}")


def service_unavailable(message: str) -> ApiStatusError:
    return ApiStatusError(503, "ServiceUnavailable", message)
