"""Parse a CRD ``openAPIV3Schema`` into a tree of :class:`Node` objects, rejecting schemas that
kube-apiserver would reject (not structural, bad list-type, bad pattern).

Called once per CRD version by :meth:`.schema.StructuralSchema.compile`; the validators, the
defaulter/pruner and the CEL pass are all compiled from the resulting tree. Errors are
:class:`SchemaError` naming the schema path, e.g.
``openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object
fields``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, NoReturn

from computedomain_sim.apiserver.schema_regex import PatternError, compile_pattern

TYPES: Final = frozenset({"object", "array", "string", "integer", "number", "boolean"})
LIST_TYPES: Final = frozenset({"atomic", "set", "map"})
MAP_TYPES: Final = frozenset({"granular", "atomic"})
_KNOWN_KEYS: Final = frozenset(
    {
        "type", "format", "title", "description", "default", "example", "nullable", "enum",
        "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "multipleOf",
        "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
        "maxProperties", "minProperties", "required", "items", "properties",
        "additionalProperties", "allOf", "anyOf", "oneOf", "not", "externalDocs",
        "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type", "x-kubernetes-validations", "$schema", "id",
    }
)  # fmt: skip
_NOT_ALLOWED: Final = {
    "$ref": "$ref is not supported",
    "definitions": "definitions is not supported",
    "dependencies": "dependencies is not supported",
    "patternProperties": "patternProperties is not supported",
    "additionalItems": "additionalItems is not supported",
}


class SchemaError(ValueError):
    """The CRD's schema itself is invalid or not structural; the message names the path."""


class Node:
    """One schema node; plain data, built once and then only read."""

    __slots__ = (
        "additional", "additional_allowed", "all_of", "default", "embedded", "enum",
        "exclusive_maximum", "exclusive_minimum", "format", "has_default", "int_or_string",
        "items", "list_map_keys", "list_type", "map_type", "max_items", "max_length",
        "max_properties", "maximum", "min_items", "min_length", "min_properties", "minimum",
        "multiple_of", "nullable", "path", "pattern", "pattern_source", "preserve_unknown",
        "properties", "raw", "required", "rules", "type", "unique_items",
    )  # fmt: skip

    def __init__(self, path: str, raw: Mapping[str, Any]) -> None:
        self.path = path
        self.raw = raw
        self.type: str = raw.get("type") or ""
        self.format: str = raw.get("format") or ""
        self.nullable = bool(raw.get("nullable", False))
        self.int_or_string = bool(raw.get("x-kubernetes-int-or-string", False))
        self.preserve_unknown = bool(raw.get("x-kubernetes-preserve-unknown-fields", False))
        self.embedded = bool(raw.get("x-kubernetes-embedded-resource", False))
        self.has_default = "default" in raw
        self.default: Any = raw.get("default")
        self.required: tuple[str, ...] = tuple(raw.get("required") or ())
        enum = raw.get("enum")
        self.enum: tuple[Any, ...] | None = tuple(enum) if enum is not None else None
        self.minimum: float | None = raw.get("minimum")
        self.maximum: float | None = raw.get("maximum")
        self.exclusive_minimum = bool(raw.get("exclusiveMinimum", False))
        self.exclusive_maximum = bool(raw.get("exclusiveMaximum", False))
        self.multiple_of: float | None = raw.get("multipleOf")
        self.min_length: int | None = raw.get("minLength")
        self.max_length: int | None = raw.get("maxLength")
        self.pattern_source: str = raw.get("pattern") or ""
        self.pattern: re.Pattern[str] | None = None
        self.min_items: int | None = raw.get("minItems")
        self.max_items: int | None = raw.get("maxItems")
        self.unique_items = bool(raw.get("uniqueItems", False))
        self.min_properties: int | None = raw.get("minProperties")
        self.max_properties: int | None = raw.get("maxProperties")
        self.list_type: str = raw.get("x-kubernetes-list-type") or ""
        self.list_map_keys: tuple[str, ...] = tuple(raw.get("x-kubernetes-list-map-keys") or ())
        self.map_type: str = raw.get("x-kubernetes-map-type") or ""
        self.rules: tuple[Mapping[str, Any], ...] = tuple(raw.get("x-kubernetes-validations") or ())
        self.properties: dict[str, Node] = {}
        self.additional: Node | None = None
        self.additional_allowed = True
        self.items: Node | None = None
        self.all_of: tuple[Node, ...] = ()

    @property
    def type_name(self) -> str:
        """The type as kube-openapi words it in messages (``integer,string`` for int-or-string)."""
        return "integer,string" if self.int_or_string else self.type


def parse(
    raw: Any, path: str = "openAPIV3Schema", *, root: bool = True, junctor: bool = False
) -> Node:
    """Build the node tree; pure. Raises :class:`SchemaError` for a non-structural schema.

    ``junctor`` marks a node under ``allOf``: a value validation, which need not (and in a
    structural schema must not) declare a type.
    """
    if not isinstance(raw, Mapping):
        _fail(path, "Invalid value: must be an object")
    node = Node(path, raw)
    _check_keys(node)
    if not junctor:
        _check_type(node, root=root)
    _check_numbers(node)
    if node.pattern_source:
        try:
            node.pattern = compile_pattern(node.pattern_source)
        except PatternError as exc:
            _fail(f"{path}.pattern", f"Invalid value: {node.pattern_source!r}: {exc}")
    props = raw.get("properties")
    if props is not None:
        if not isinstance(props, Mapping):
            _fail(f"{path}.properties", "Invalid value: must be an object")
        for name, sub in props.items():
            node.properties[name] = parse(
                sub, f"{path}.properties[{name}]", root=False, junctor=junctor
            )
    additional = raw.get("additionalProperties")
    if additional is not None:
        if root and not junctor:
            _fail(f"{path}.additionalProperties", "Forbidden: must not be used at the root")
        if props and additional is not True:
            _fail(
                f"{path}.additionalProperties",
                "Forbidden: additionalProperties and properties are mutual exclusive",
            )
        if isinstance(additional, bool):
            node.additional_allowed = additional
        else:
            node.additional = parse(
                additional, f"{path}.additionalProperties", root=False, junctor=junctor
            )
    items = raw.get("items")
    if items is not None:
        if not isinstance(items, Mapping):
            _fail(f"{path}.items", "Forbidden: items must be a schema object and not an array")
        node.items = parse(items, f"{path}.items", root=False, junctor=junctor)
    elif node.type == "array" and not junctor:
        _fail(f"{path}.items", "Required value: must be specified")
    node.all_of = tuple(
        parse(sub, f"{path}.allOf[{i}]", root=False, junctor=True)
        for i, sub in enumerate(raw.get("allOf") or ())
    )
    if not junctor:
        _check_list_type(node)
    if root:
        _check_root_metadata(node)
    return node


def _fail(path: str, message: str) -> NoReturn:
    raise SchemaError(f"{path}: {message}")


def _check_keys(node: Node) -> None:
    for key in node.raw:
        if key in _NOT_ALLOWED:
            _fail(f"{node.path}.{key}", f"Forbidden: {_NOT_ALLOWED[key]}")
        if key not in _KNOWN_KEYS:
            _fail(f"{node.path}.{key}", "Forbidden: unknown schema field")


def _check_type(node: Node, *, root: bool) -> None:
    if node.type and node.type not in TYPES:
        _fail(
            f"{node.path}.type",
            f'Unsupported value: "{node.type}": supported values: "array", "boolean", '
            '"integer", "number", "object", "string"',
        )
    if node.int_or_string and node.type:
        _fail(f"{node.path}.type", "Invalid value: must be empty for x-kubernetes-int-or-string")
    if not node.type and not node.int_or_string and not node.preserve_unknown:
        what = "at the root" if root else "for specified object fields"
        _fail(f"{node.path}.type", f"Required value: must not be empty {what}")
    if node.raw.get("properties") and node.type not in ("object", ""):
        _fail(f"{node.path}.properties", "Forbidden: must be empty for type other than object")
    if node.embedded and node.type != "object":
        _fail(
            f"{node.path}.type", "Invalid value: must be object if x-kubernetes-embedded-resource"
        )
    if node.map_type and node.map_type not in MAP_TYPES:
        _fail(f"{node.path}.x-kubernetes-map-type", "Unsupported value: must be granular or atomic")
    if not isinstance(node.required, tuple) or not all(isinstance(r, str) for r in node.required):
        _fail(f"{node.path}.required", "Invalid value: must be a list of strings")
    if node.rules and not all(isinstance(r, Mapping) for r in node.rules):
        _fail(f"{node.path}.x-kubernetes-validations", "Invalid value: must be a list of objects")


def _check_numbers(node: Node) -> None:
    for key in ("minimum", "maximum", "multipleOf"):
        value = node.raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            _fail(f"{node.path}.{key}", "Invalid value: must be a number")
    for key in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
        value = node.raw.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            _fail(f"{node.path}.{key}", "Invalid value: must be a non-negative integer")
    if node.multiple_of is not None and node.multiple_of <= 0:
        _fail(f"{node.path}.multipleOf", "Invalid value: must be positive")


def _check_list_type(node: Node) -> None:
    if node.list_type and node.list_type not in LIST_TYPES:
        _fail(
            f"{node.path}.x-kubernetes-list-type",
            f'Unsupported value: "{node.list_type}": supported values: "atomic", "map", "set"',
        )
    if node.list_type and node.type != "array":
        _fail(
            f"{node.path}.x-kubernetes-list-type",
            "Invalid value: must only be used if type is array",
        )
    if node.list_map_keys and node.list_type != "map":
        _fail(
            f"{node.path}.x-kubernetes-list-map-keys",
            'Forbidden: must not be set if x-kubernetes-list-type is not "map"',
        )
    if (
        (
            node.list_type == "set"
            and node.items is not None
            and node.items.type in ("object", "array")
        )
        and node.items.map_type != "atomic"
        and node.items.type == "object"
    ):
        _fail(
            f"{node.path}.items.x-kubernetes-map-type",
            "Invalid value: must be atomic as item of a list with x-kubernetes-list-type=set",
        )
    if node.list_type != "map":
        return
    items = node.items
    if not node.list_map_keys:
        _fail(
            f"{node.path}.x-kubernetes-list-map-keys",
            "Required value: must not be empty if x-kubernetes-list-type is map",
        )
    if items is None or items.type != "object":
        _fail(
            f"{node.path}.items.type",
            'Invalid value: must be object if parent array\'s x-kubernetes-list-type is "map"',
        )
    for i, key in enumerate(node.list_map_keys):
        prop = items.properties.get(key)
        where = f"{node.path}.x-kubernetes-list-map-keys[{i}]"
        if prop is None:
            _fail(where, f'Invalid value: "{key}": entries must all be names of item properties')
        if prop.type not in ("string", "integer", "number", "boolean") and not prop.int_or_string:
            _fail(where, f'Invalid value: "{key}": must be a scalar property')
        if key not in items.required and not prop.has_default:
            _fail(where, f'Invalid value: "{key}": must be required or have a default')


def _check_root_metadata(node: Node) -> None:
    meta = node.properties.get("metadata")
    if meta is None:
        return
    if meta.type != "object":
        _fail(f"{meta.path}.type", 'Unsupported value: must be "object" at metadata')
    extra = set(meta.properties) - {"name", "generateName"}
    if extra or meta.rules or meta.has_default or meta.additional is not None:
        _fail(meta.path, "Forbidden: must not specify anything other than name and generateName")
