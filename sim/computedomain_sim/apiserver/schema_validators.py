"""OpenAPI value validation of custom resources, compiled into a tree of small closures.

Called by :class:`.schema.StructuralSchema` (compiled once per CRD version, run per write). It
follows kube-openapi's ``SchemaValidator`` node by node: type, ``allOf``, string (maxLength,
minLength, pattern: first failure only), format, number (multipleOf, minimum, maximum), array
(items, minItems, maxItems, uniqueItems), enum, object (min/maxProperties, additionalProperties,
properties, required), and words each failure as ``kubeOpenAPIResultToFieldErrors`` does.

Update ratcheting (CRDValidationRatcheting, on by default since 1.33): a subtree whose new value
equals the correlated old value keeps whatever errors it had; correlation follows object keys
and list-type=map keys, as kube-apiserver's does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

import orjson

from computedomain_sim.apiserver import schema_messages as msg
from computedomain_sim.apiserver.schema_formats import FORMATS
from computedomain_sim.apiserver.schema_nodes import Node
from computedomain_sim.apiserver.status import FieldCause

NO_OLD: Final = object()  # no correlated old value (create, or not correlatable)
Check = Callable[[Any, Any, str, list[FieldCause]], None]
FieldNamer = Callable[[str], str]
_Part = Callable[[Any, str, list[FieldCause]], None]
_INT32: Final = (-(2**31), 2**31 - 1)


def json_type(value: Any) -> str:
    """The JSON type name kube-openapi reports for a decoded value."""
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


def field_name(path: str) -> str:
    """The field of an error at ``path``; the root is Go's nil path, printed ``<nil>``."""
    return path or "<nil>"


def prefixed_field_namer(prefix: str) -> FieldNamer:
    """Field names under ``prefix`` (``status``) for a subresource's schema: kube-openapi words
    the message relative to the subresource, the field path includes it."""
    if not prefix:
        return field_name
    return lambda path: f"{prefix}.{path}" if path else prefix


def child_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_PY_TYPES: Final = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
}


def _type_part(node: Node, fname: FieldNamer) -> _Part | None:
    if not node.type and not node.int_or_string:
        return None
    allowed: set[str] = {"integer", "string"} if node.int_or_string else {node.type}
    if "number" in allowed:
        allowed.add("integer")
    # type(True) is bool, so bools never pass as integers here.
    fast = frozenset(_PY_TYPES[t] for t in allowed)
    name = node.type_name
    accepts_integral_float = "integer" in allowed
    nullable = node.nullable

    def check(value: Any, path: str, out: list[FieldCause]) -> None:
        if type(value) in fast or (value is None and nullable):
            return
        actual = json_type(value)
        if actual in allowed:
            return
        if actual == "number" and accepts_integral_float and float(value).is_integer():
            return
        detail = msg.in_body(path, f"must be of type {name}: {msg.go_quote(actual)}")
        out.append(msg.type_invalid(fname(path), actual, detail))

    return check


def _enum_part(node: Node, fname: FieldNamer) -> _Part | None:
    if not node.enum:
        return None
    values = node.enum

    def check(value: Any, path: str, out: list[FieldCause]) -> None:
        for candidate in values:
            if json_equal(value, candidate):
                return
        out.append(msg.not_supported(fname(path), value, values))

    return check


def json_equal(a: Any, b: Any) -> bool:
    """Deep equality of decoded JSON that keeps booleans apart from numbers (``1`` equals
    ``1.0``, ``true`` does not equal ``1``). Every ratcheting check asks it of its whole subtree,
    so Python's equality decides first, at C speed: values it finds different are, and equal
    containers whose key-sorted encodings agree hold no boolean standing for a number. Only
    what is left (equal containers that mix them up, or the numbers 1 and 1.0) is walked."""
    if a is b:
        return True
    if a != b:
        return False
    kind = type(a)
    if kind is type(b) and kind is not dict and kind is not list:
        return True  # equal scalars of one type
    if isinstance(a, dict | list):
        try:
            if orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
                b, option=orjson.OPT_SORT_KEYS
            ):
                return True
        except orjson.JSONEncodeError:
            pass  # integers beyond 64 bits: the walk decides
    return _json_walk(a, b)


def _json_walk(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_json_walk(v, b[k]) for k, v in a.items())
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_json_walk, a, b))
    return (type(a) is type(b) and a == b) or (is_number(a) and is_number(b) and a == b)


def _string_part(node: Node, fname: FieldNamer) -> _Part | None:
    max_len, min_len, pattern = node.max_length, node.min_length, node.pattern
    fmt = FORMATS.get(node.format)
    if max_len is None and min_len is None and pattern is None and fmt is None:
        return None
    source = node.pattern_source
    format_name = node.format

    def check(value: str, path: str, out: list[FieldCause]) -> None:
        field = fname(path)
        if max_len is not None and len(value) > max_len:
            out.append(msg.too_long(field, max_len))
        elif min_len is not None and len(value) < min_len:
            detail = msg.in_body(path, f"should be at least {min_len} chars long")
            out.append(msg.invalid(field, value, detail))
        elif pattern is not None and pattern.search(value) is None:
            out.append(msg.invalid(field, value, msg.in_body(path, f"should match '{source}'")))
        if fmt is not None and not fmt(value):
            detail = msg.in_body(path, f"must be of type {format_name}: {msg.go_quote(value)}")
            out.append(msg.type_invalid(field, value, detail))

    return check


def _bound_text(value: Any, bound: float) -> str:
    """kube-openapi prints an integral bound as int64 for int data, as float64 otherwise."""
    if isinstance(value, int) and float(bound).is_integer():
        return str(int(bound))
    return msg.go_float(float(bound))


def _number_part(node: Node, fname: FieldNamer) -> _Part | None:
    minimum, maximum, multiple = node.minimum, node.maximum, node.multiple_of
    ex_min, ex_max = node.exclusive_minimum, node.exclusive_maximum
    int32 = node.type == "integer" and node.format == "int32"
    if minimum is None and maximum is None and multiple is None and not int32:
        return None

    def check(value: float, path: str, out: list[FieldCause]) -> None:
        field = fname(path)
        if int32 and isinstance(value, int) and not _INT32[0] <= value <= _INT32[1]:
            detail = f"Checked value must be of type integer with format int32 in {path}"
            out.append(msg.invalid(fname(""), "", detail))
        if multiple is not None and not _is_multiple(value, multiple):
            detail = msg.in_body(path, f"should be a multiple of {_bound_text(value, multiple)}")
            out.append(msg.invalid(field, value, detail))
        if minimum is not None and (value <= minimum if ex_min else value < minimum):
            word = "greater than" if ex_min else "greater than or equal to"
            detail = msg.in_body(path, f"should be {word} {_bound_text(value, minimum)}")
            out.append(msg.invalid(field, value, detail))
        if maximum is not None and (value >= maximum if ex_max else value > maximum):
            word = "less than" if ex_max else "less than or equal to"
            detail = msg.in_body(path, f"should be {word} {_bound_text(value, maximum)}")
            out.append(msg.invalid(field, value, detail))

    return check


def _is_multiple(value: float, factor: float) -> bool:
    if isinstance(value, int) and float(factor).is_integer():
        return value % int(factor) == 0
    ratio = value / factor if factor >= 1 else value * (1 / factor)
    return math.isfinite(ratio) and float(ratio).is_integer()


def compile_checks(node: Node, fname: FieldNamer = field_name) -> Check:
    """The validator closure of ``node`` (and, recursively, of its children); pure to call.

    The closure appends :class:`FieldCause` objects to ``out`` and never raises on bad data.
    """
    type_part = _type_part(node, fname)
    enum_part = _enum_part(node, fname)
    string_part = _string_part(node, fname)
    number_part = _number_part(node, fname)
    all_of = tuple(compile_checks(sub, fname) for sub in node.all_of)
    array_part = _array_part(node, fname)
    object_part = _object_part(node, fname)

    def check(value: Any, old: Any, path: str, out: list[FieldCause]) -> None:
        if old is not NO_OLD and json_equal(value, old):
            return  # ratcheting: an unchanged subtree keeps its errors
        if type_part is not None:
            type_part(value, path, out)
        if value is None:
            if enum_part is not None and not node.nullable:
                enum_part(value, path, out)
            return
        for sub in all_of:
            sub(value, NO_OLD, path, out)
        if isinstance(value, str):
            if string_part is not None:
                string_part(value, path, out)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            if number_part is not None:
                number_part(value, path, out)
        elif isinstance(value, list) and array_part is not None:
            array_part(value, old, path, out)
        if enum_part is not None:
            enum_part(value, path, out)
        if isinstance(value, dict) and object_part is not None:
            object_part(value, old, path, out)

    return check


def correlate_list(node: Node, old: Any) -> dict[tuple[Any, ...], Any] | None:
    """Old items of a list-type=map by key tuple, for correlation; ``None`` when not a map list."""
    if node.list_type != "map" or not isinstance(old, list):
        return None
    keys = node.list_map_keys
    return {tuple(item.get(k) for k in keys): item for item in old if isinstance(item, dict)}


def _array_part(node: Node, fname: FieldNamer) -> Check | None:
    items = compile_checks(node.items, fname) if node.items is not None else None
    min_items, max_items, unique = node.min_items, node.max_items, node.unique_items
    keys = node.list_map_keys
    if items is None and min_items is None and max_items is None and not unique:
        return None

    def check(value: list[Any], old: Any, path: str, out: list[FieldCause]) -> None:
        if items is not None:
            old_items = correlate_list(node, old) if old is not NO_OLD else None
            for i, item in enumerate(value):
                old_item = NO_OLD
                if old_items is not None and isinstance(item, dict):
                    old_item = old_items.get(tuple(item.get(k) for k in keys), NO_OLD)
                items(item, old_item, f"{path}[{i}]", out)
        field = fname(path)
        if min_items is not None and len(value) < min_items:
            detail = msg.in_body(path, f"should have at least {min_items} items")
            out.append(msg.invalid(field, len(value), detail))
        if max_items is not None and len(value) > max_items:
            out.append(msg.too_many(field, len(value), max_items))
        if unique and _has_duplicates(value):
            out.append(msg.invalid(field, "", msg.in_body(path, "shouldn't contain duplicates")))

    return check


def _has_duplicates(value: list[Any]) -> bool:
    return any(json_equal(a, b) for i, a in enumerate(value) for b in value[i + 1 :])


def _object_part(node: Node, fname: FieldNamer) -> Check | None:
    properties = tuple((name, compile_checks(sub, fname)) for name, sub in node.properties.items())
    additional = compile_checks(node.additional, fname) if node.additional is not None else None
    forbid_unknown = not node.additional_allowed
    known = frozenset(node.properties)
    required = node.required
    min_props, max_props = node.min_properties, node.max_properties
    correlatable = node.map_type in ("", "granular", "atomic")
    if not (properties or additional or forbid_unknown or required) and (
        min_props is None and max_props is None
    ):
        return None

    def check(value: dict[str, Any], old: Any, path: str, out: list[FieldCause]) -> None:
        old_map = old if correlatable and isinstance(old, dict) else None
        field = fname(path)
        if min_props is not None and len(value) < min_props:
            detail = msg.in_body(path, f"should have at least {min_props} properties")
            out.append(msg.invalid(field, len(value), detail))
        if max_props is not None and len(value) > max_props:
            out.append(msg.too_many(field, len(value), max_props))
        if forbid_unknown:
            for key in value:
                if key not in known:
                    detail = msg.in_body(f"{path}.{key}", "is a forbidden property")
                    out.append(msg.invalid(field, key, detail))
        elif additional is not None:
            for key, sub_value in value.items():
                old_sub = old_map.get(key, NO_OLD) if old_map is not None else NO_OLD
                additional(sub_value, old_sub, child_path(path, key), out)
        for name, sub_check in properties:
            if name in value:
                old_sub = old_map.get(name, NO_OLD) if old_map is not None else NO_OLD
                sub_check(value[name], old_sub, child_path(path, name), out)
        for name in required:
            if name not in value:
                out.append(msg.required(fname(child_path(path, name))))

    return check
