"""OpenAPI validation of custom resources: each failure worded as kube-apiserver words it."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim.apiserver.schema import StructuralSchema


def _schema(field: dict[str, Any], **root: Any) -> StructuralSchema:
    return StructuralSchema.compile(
        {"type": "object", "properties": {"spec": {"type": "object", "properties": {"f": field}}}}
        | root
    )


def _messages(field: dict[str, Any], value: Any) -> list[str]:
    return [c.render() for c in _schema(field).validate({"spec": {"f": value}}, None)]


CASES = [
    ("integer ok", {"type": "integer"}, 3, []),
    ("integral float is an integer", {"type": "integer"}, 3.0, []),
    (
        "string for integer",
        {"type": "integer"},
        "x",
        ['spec.f: Invalid value: "string": spec.f in body must be of type integer: "string"'],
    ),
    (
        "float for integer",
        {"type": "integer"},
        1.5,
        ['spec.f: Invalid value: "number": spec.f in body must be of type integer: "number"'],
    ),
    ("integer for number", {"type": "number"}, 2, []),
    (
        "bool is not a number",
        {"type": "number"},
        True,
        ['spec.f: Invalid value: "boolean": spec.f in body must be of type number: "boolean"'],
    ),
    (
        "null for non-nullable",
        {"type": "string"},
        None,
        ['spec.f: Invalid value: "null": spec.f in body must be of type string: "null"'],
    ),
    ("null for nullable", {"type": "string", "nullable": True}, None, []),
    ("int-or-string int", {"x-kubernetes-int-or-string": True}, 8080, []),
    ("int-or-string string", {"x-kubernetes-int-or-string": True}, "http", []),
    (
        "int-or-string bool",
        {"x-kubernetes-int-or-string": True},
        False,
        [
            'spec.f: Invalid value: "boolean": spec.f in body must be of type integer,string: '
            '"boolean"'
        ],
    ),
    (
        "enum",
        {"type": "string", "enum": ["All", "Single"]},
        "Foo",
        ['spec.f: Unsupported value: "Foo": supported values: "All", "Single"'],
    ),
    (
        "numeric enum",
        {"type": "integer", "enum": [1, 2]},
        3,
        ['spec.f: Unsupported value: 3: supported values: "1", "2"'],
    ),
    (
        "minimum",
        {"type": "integer", "minimum": 0},
        -1,
        ["spec.f: Invalid value: -1: spec.f in body should be greater than or equal to 0"],
    ),
    (
        "exclusive minimum",
        {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
        0,
        ["spec.f: Invalid value: 0: spec.f in body should be greater than 0"],
    ),
    (
        "maximum float",
        {"type": "number", "maximum": 1.5},
        2.25,
        ["spec.f: Invalid value: 2.25: spec.f in body should be less than or equal to 1.5"],
    ),
    (
        "exclusive maximum",
        {"type": "integer", "maximum": 10, "exclusiveMaximum": True},
        10,
        ["spec.f: Invalid value: 10: spec.f in body should be less than 10"],
    ),
    (
        "large bound printed like Go",
        {"type": "number", "maximum": 1000000},
        2e6,
        ["spec.f: Invalid value: 2e+06: spec.f in body should be less than or equal to 1e+06"],
    ),
    (
        "multipleOf",
        {"type": "integer", "multipleOf": 4},
        6,
        ["spec.f: Invalid value: 6: spec.f in body should be a multiple of 4"],
    ),
    (
        "maxLength counts characters",
        {"type": "string", "maxLength": 3},
        "héllo",
        ["spec.f: Too long: may not be more than 3 bytes"],
    ),
    ("maxLength unicode ok", {"type": "string", "maxLength": 5}, "héllo", []),
    (
        "minLength",
        {"type": "string", "minLength": 2},
        "a",
        ['spec.f: Invalid value: "a": spec.f in body should be at least 2 chars long'],
    ),
    (
        "pattern",
        {"type": "string", "pattern": "^[a-z]+$"},
        "Abc",
        ["spec.f: Invalid value: \"Abc\": spec.f in body should match '^[a-z]+$'"],
    ),
    (
        "pattern $ does not match before a trailing newline",
        {"type": "string", "pattern": "^[a-z]+$"},
        "abc\n",
        ["spec.f: Invalid value: \"abc\\n\": spec.f in body should match '^[a-z]+$'"],
    ),
    ("pattern is a search", {"type": "string", "pattern": "b"}, "abc", []),
    (
        "format uuid",
        {"type": "string", "format": "uuid"},
        "nope",
        ['spec.f: Invalid value: "nope": spec.f in body must be of type uuid: "nope"'],
    ),
    ("unknown format ignored", {"type": "string", "format": "k8s-short-name"}, "x", []),
    (
        "minItems",
        {"type": "array", "items": {"type": "string"}, "minItems": 1},
        [],
        ["spec.f: Invalid value: 0: spec.f in body should have at least 1 items"],
    ),
    (
        "maxItems",
        {"type": "array", "items": {"type": "string"}, "maxItems": 1},
        ["a", "b"],
        ["spec.f: Too many: 2: must have at most 1 item"],
    ),
    (
        "items are validated with their index",
        {"type": "array", "items": {"type": "integer"}},
        [1, "x"],
        ['spec.f[1]: Invalid value: "string": spec.f[1] in body must be of type integer: "string"'],
    ),
    (
        "uniqueItems",
        {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        [1, 1],
        ['spec.f: Invalid value: "": spec.f in body shouldn\'t contain duplicates'],
    ),
    (
        "maxProperties",
        {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 1},
        {"a": "1", "b": "2"},
        ["spec.f: Too many: 2: must have at most 1 item"],
    ),
    (
        "minProperties",
        {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1},
        {},
        ["spec.f: Invalid value: 0: spec.f in body should have at least 1 properties"],
    ),
    (
        "additionalProperties schema",
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"a": 1, "b": "x"},
        ['spec.f.b: Invalid value: "string": spec.f.b in body must be of type integer: "string"'],
    ),
    (
        "additionalProperties false",
        {"type": "object", "additionalProperties": False},
        {"z": 1},
        ['spec.f: Invalid value: "z": spec.f.z in body is a forbidden property'],
    ),
    (
        "required",
        {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        {},
        ["spec.f.name: Required value"],
    ),
    (
        "allOf",
        {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 5}]},
        9,
        ["spec.f: Invalid value: 9: spec.f in body should be less than or equal to 5"],
    ),
    (
        "preserve-unknown object takes anything",
        {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        {"a": [1, {"b": None}]},
        [],
    ),
    (
        "list-map duplicate key",
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "v": {"type": "integer"}},
            },
        },
        [{"name": "x", "v": 1}, {"name": "y"}, {"name": "x", "v": 2}, {"name": "x"}],
        ['spec.f[2]: Duplicate value: {"name":"x"}'],
    ),
    (
        "list-map with two keys",
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["port", "protocol"],
            "items": {
                "type": "object",
                "required": ["port", "protocol"],
                "properties": {"port": {"type": "integer"}, "protocol": {"type": "string"}},
            },
        },
        [
            {"port": 80, "protocol": "TCP"},
            {"port": 80, "protocol": "UDP"},
            {"port": 80, "protocol": "TCP"},
        ],
        ['spec.f[2]: Duplicate value: {"port":80,"protocol":"TCP"}'],
    ),
    (
        "list-set duplicates",
        {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        ["a", "b", "a", "b", "a"],
        ['spec.f[2]: Duplicate value: "a"', 'spec.f[3]: Duplicate value: "b"'],
    ),
    (
        "list-set keeps types apart",
        {
            "type": "array",
            "x-kubernetes-list-type": "set",
            "items": {"x-kubernetes-int-or-string": True},
        },
        [1, "1"],
        [],
    ),
]


@pytest.mark.parametrize(
    ("field", "value", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_validation_wording(field: dict[str, Any], value: Any, expected: list[str]) -> None:
    assert _messages(field, value) == expected


def test_causes_carry_the_kubernetes_reason() -> None:
    schema = _schema({"type": "string", "enum": ["A"]})
    (cause,) = schema.validate({"spec": {"f": "B"}}, None)
    assert (cause.reason, cause.field) == ("FieldValueNotSupported", "spec.f")


def test_causes_are_ordered_depth_first_in_schema_order() -> None:
    schema = StructuralSchema.compile(
        {
            "type": "object",
            "required": ["c"],
            "properties": {
                "b": {"type": "integer"},
                "a": {"type": "object", "properties": {"x": {"type": "integer"}}},
                "c": {"type": "string"},
            },
        }
    )
    causes = schema.validate({"a": {"x": "1"}, "b": "2"}, None)
    assert [c.field for c in causes] == ["b", "a.x", "c"]


@pytest.mark.parametrize(
    "value",
    [None, 1, "x", [], [None], {"spec": None}, {"spec": []}, {"spec": {"f": {"g": object}}}],
    ids=["null", "int", "str", "list", "list-of-null", "null-spec", "list-spec", "odd-type"],
)
def test_validate_never_raises_on_bad_shapes(value: Any) -> None:
    schema = _schema(
        {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
    )
    assert isinstance(schema.validate(value, value), list)


def test_ratcheting_keeps_unchanged_invalid_fields() -> None:
    schema = StructuralSchema.compile(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "integer", "minimum": 0},
                        "b": {"type": "integer", "minimum": 0},
                    },
                }
            },
        }
    )
    old = {"spec": {"a": -1, "b": 1}}
    assert schema.validate({"spec": {"a": -1, "b": 2}}, old) == []
    (cause,) = schema.validate({"spec": {"a": -1, "b": -2}}, old)
    assert cause.field == "spec.b"
    (cause,) = schema.validate({"spec": {"a": -1, "b": 1}}, None)
    assert cause.field == "spec.a"


def test_ratcheting_correlates_list_map_items_by_key() -> None:
    schema = StructuralSchema.compile(
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "n": {"type": "integer", "maximum": 5},
                        },
                    },
                }
            },
        }
    )
    old = {"items": [{"name": "a", "n": 9}, {"name": "b", "n": 1}]}
    new = {"items": [{"name": "b", "n": 2}, {"name": "a", "n": 9}]}
    assert schema.validate(new, old) == []
    new["items"].append({"name": "c", "n": 7})
    assert [c.field for c in schema.validate(new, old)] == ["items[2].n"]


def test_list_type_errors_ratchet_when_the_old_object_had_them() -> None:
    schema = _schema(
        {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
    )
    old = {"spec": {"f": ["a", "a"]}}
    assert schema.validate({"spec": {"f": ["a", "a", "b"]}}, old) == []
    assert len(schema.validate({"spec": {"f": ["a", "a", "b"]}}, None)) == 1


EMBEDDED = StructuralSchema.compile(
    {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "templates": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "x-kubernetes-embedded-resource": True,
                            "x-kubernetes-preserve-unknown-fields": True,
                        },
                    }
                },
            }
        },
    }
)
EMBEDDED_CASES = [
    ("complete", {"apiVersion": "v1", "kind": "Pod"}, []),
    (
        "missing type meta",
        {"metadata": {}},
        ["spec.templates[0].apiVersion: Required value", "spec.templates[0].kind: Required value"],
    ),
    (
        "empty strings",
        {"apiVersion": "", "kind": ""},
        [
            'spec.templates[0].apiVersion: Invalid value: "": must not be empty',
            'spec.templates[0].kind: Invalid value: "": must not be empty',
        ],
    ),
    (
        "not strings",
        {"apiVersion": 1, "kind": ["Pod"]},
        [
            "spec.templates[0].apiVersion: Invalid value: 1: must be a string",
            'spec.templates[0].kind: Invalid value: ["Pod"]: must be a string',
        ],
    ),
    (
        "bad group version",
        {"apiVersion": "a/b/c", "kind": "Pod"},
        [
            'spec.templates[0].apiVersion: Invalid value: "a/b/c": '
            "unexpected GroupVersion string: a/b/c"
        ],
    ),
]


@pytest.mark.parametrize(
    ("template", "expected"), [c[1:] for c in EMBEDDED_CASES], ids=[c[0] for c in EMBEDDED_CASES]
)
def test_embedded_resources_need_type_meta(template: dict[str, Any], expected: list[str]) -> None:
    obj = {"spec": {"templates": [template]}}
    assert [c.render() for c in EMBEDDED.validate(obj, None)] == expected


def test_embedded_kind_must_be_a_dns_label_in_any_case() -> None:
    obj = {"spec": {"templates": [{"apiVersion": "v1", "kind": "Bad_Kind"}]}}
    (cause,) = EMBEDDED.validate(obj, None)
    assert cause.render().startswith(
        'spec.templates[0].kind: Invalid value: "Bad_Kind": may have mixed case, but should '
        "otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters"
    )
    ok = {"spec": {"templates": [{"apiVersion": "apps/v1", "kind": "DaemonSet"}]}}
    assert EMBEDDED.validate(ok, None) == []
