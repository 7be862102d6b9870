"""Field causes for CRD validation, worded byte for byte as kube-apiserver (1.35+) words them.

Called by the schema validators (:mod:`.schema_validators`, :mod:`.schema_cel`,
:mod:`.schema_listtype`); builds :class:`~.status.FieldCause` objects.

Sources (checked against the stored upstream trees):
- apimachinery ``pkg/util/validation/field/errors.go``: ``ErrorBody`` renders a bad value with
  ``%q`` for strings, ``%v`` for int64/float64/bool and JSON for anything else (since 1.34, commit
  "Nicer value rendering in API errors"); ``TooLong``/``TooMany``/``NotSupported`` details.
- kube-openapi ``pkg/validation/errors/schema.go``: ``<path> in body must be of type integer:
  "string"``, ``should be greater than or equal to``, ``should match '<re>'`` ...
- apiextensions-apiserver ``pkg/apiserver/validation/validation.go``
  (``kubeOpenAPIResultToFieldErrors``): which kube-openapi codes become which field error types.
- apiextensions-apiserver ``pkg/apiserver/schema/cel/validation.go``: a failed rule on an object or
  array omits the value (``spec: Invalid value: A computeDomain.spec is immutable``, since 1.35);
  on a scalar it shows it.

``status.py``'s builders render values the pre-1.34 way (``"object"`` for a map), so the causes
here are built directly from :class:`FieldCause`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Final

from computedomain_sim.apiserver.status import FieldCause

OMIT: Final = object()  # field.OmitValueType: the value is left out of the message
# strconv.FormatFloat(f, 'g', -1, 64), which %v uses, switches to exponent form from 1e6.
_EXPONENT_FROM: Final = 6


def go_float(value: float) -> str:
    """Go's ``%v`` of a float64: shortest digits, exponent form when exp < -4 or exp >= 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    number = Decimal(repr(abs(value))).normalize()
    digits = "".join(str(d) for d in number.as_tuple().digits)
    exponent = number.adjusted()
    sign = "-" if value < 0 else ""
    if exponent < -4 or exponent >= _EXPONENT_FROM:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    return sign + format(number, "f")


def go_value(value: Any) -> str:
    """``%v`` of a scalar as kube-openapi formats limits (``0``, ``1.5``, ``true``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)


def render_bad_value(value: Any) -> str:
    """apimachinery ``ErrorBody``'s rendering of a bad value (without the ``Invalid value``)."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool | int | float):
        return go_value(value)
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` / ``%q`` for the characters that occur in practice."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _body(kind: str, value: Any, detail: str) -> str:
    text = kind if value is OMIT else f"{kind}: {render_bad_value(value)}"
    return f"{text}: {detail}" if detail else text


def invalid(field: str, value: Any, detail: str) -> FieldCause:
    return FieldCause("FieldValueInvalid", field, _body("Invalid value", value, detail))


def type_invalid(field: str, value: Any, detail: str) -> FieldCause:
    return FieldCause("FieldValueTypeInvalid", field, _body("Invalid value", value, detail))


def required(field: str, detail: str = "") -> FieldCause:
    return FieldCause("FieldValueRequired", field, _body("Required value", OMIT, detail))


def forbidden(field: str, detail: str) -> FieldCause:
    return FieldCause("FieldValueForbidden", field, _body("Forbidden", OMIT, detail))


def duplicate(field: str, value: Any) -> FieldCause:
    return FieldCause("FieldValueDuplicate", field, _body("Duplicate value", value, ""))


def not_supported(field: str, value: Any, supported: Sequence[Any]) -> FieldCause:
    """``Unsupported value: "Foo": supported values: "All", "Single"`` (non-strings as JSON)."""
    quoted = ", ".join(
        go_quote(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))
        for v in supported
    )
    detail = f"supported values: {quoted}" if supported else ""
    return FieldCause("FieldValueNotSupported", field, _body("Unsupported value", value, detail))


def too_long(field: str, max_length: int) -> FieldCause:
    unit = "byte" if max_length == 1 else "bytes"
    return FieldCause(
        "FieldValueTooLong", field, f"Too long: may not be more than {max_length} {unit}"
    )


def too_many(field: str, actual: int, maximum: int) -> FieldCause:
    unit = "item" if maximum == 1 else "items"
    return FieldCause(
        "FieldValueTooMany", field, _body("Too many", actual, f"must have at most {maximum} {unit}")
    )


def in_body(path: str, text: str) -> str:
    """kube-openapi's ``<path> in body <text>`` (the path is the dotted field path)."""
    return f"{path} in body {text}"


# hasBlockingErr in apiextensions' customresource strategy: these skip CEL rules altogether.
BLOCKING_REASONS: Final = frozenset(
    {
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    }
)
RULES_NOT_CHECKED: Final = FieldCause(
    "FieldValueInvalid",
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation",
)
