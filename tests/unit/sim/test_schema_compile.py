"""Schemas kube-apiserver rejects are rejected at compile time, naming the path."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim.apiserver.schema import SchemaError, StructuralSchema


def _spec(field: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"f": field}}},
    }


F = "openAPIV3Schema.properties[spec].properties[f]"
BAD = [
    ("missing type", _spec({"properties": {}}), f"{F}.type: Required value"),
    ("unknown type", _spec({"type": "int"}), f'{F}.type: Unsupported value: "int"'),
    ("array without items", _spec({"type": "array"}), f"{F}.items: Required value"),
    ("$ref", _spec({"type": "object", "$ref": "#/x"}), f"{F}.$ref: Forbidden"),
    ("unknown keyword", _spec({"type": "string", "maxlength": 3}), f"{F}.maxlength: Forbidden"),
    (
        "properties with additionalProperties schema",
        _spec(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": {"type": "string"},
            }
        ),
        f"{F}.additionalProperties: Forbidden: "
        f"additionalProperties and properties are mutual exclusive",
    ),
    (
        "additionalProperties at the root",
        {"type": "object", "additionalProperties": {"type": "string"}},
        "openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root",
    ),
    (
        "look-ahead pattern",
        _spec({"type": "string", "pattern": "^(?=a)"}),
        f"{F}.pattern: Invalid value",
    ),
    (
        "backreference pattern",
        _spec({"type": "string", "pattern": "(a)\\1"}),
        f"{F}.pattern: Invalid value",
    ),
    ("broken pattern", _spec({"type": "string", "pattern": "[a-"}), f"{F}.pattern: Invalid value"),
    (
        "list-map without keys",
        _spec({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}}),
        f"{F}.x-kubernetes-list-map-keys: Required value",
    ),
    (
        "list-map key not required",
        _spec(
            {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            }
        ),
        f"{F}.x-kubernetes-list-map-keys[0]: Invalid value: "
        f'"name": must be required or have a default',
    ),
    (
        "list-map keys without list-type map",
        _spec({"type": "array", "x-kubernetes-list-map-keys": ["a"], "items": {"type": "string"}}),
        f"{F}.x-kubernetes-list-map-keys: Forbidden",
    ),
    (
        "bad list-type",
        _spec({"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}}),
        f'{F}.x-kubernetes-list-type: Unsupported value: "bag"',
    ),
    (
        "default of the wrong type",
        _spec({"type": "integer", "default": "x"}),
        f'{F}.default: Invalid value: "string": f in body must be of type integer'[:60],
    ),
    (
        "default outside the enum",
        _spec({"type": "string", "enum": ["A"], "default": "B"}),
        f'{F}.default: Unsupported value: "B"',
    ),
    (
        "rule that does not parse",
        _spec({"type": "string", "x-kubernetes-validations": [{"rule": "self =="}]}),
        f'{F}.x-kubernetes-validations[0].rule: Invalid value: "self ==": compilation failed: '
        "ERROR: <input>:1:8: Syntax error",
    ),
    (
        "rule with an undeclared reference",
        _spec({"type": "string", "x-kubernetes-validations": [{"rule": "size(this) > 0"}]}),
        "compilation failed: ERROR: <input>:1:6: undeclared reference to 'this'",
    ),
    (
        "rule that is not a bool",
        _spec({"type": "string", "x-kubernetes-validations": [{"rule": "'a' + 'b'"}]}),
        "must evaluate to a bool",
    ),
    (
        "messageExpression that does not compile",
        _spec(
            {
                "type": "string",
                "x-kubernetes-validations": [{"rule": "true", "messageExpression": "1 +"}],
            }
        ),
        f"{F}.x-kubernetes-validations[0].messageExpression: Invalid value",
    ),
    (
        "unknown reason",
        _spec({"type": "string", "x-kubernetes-validations": [{"rule": "true", "reason": "Nope"}]}),
        f'{F}.x-kubernetes-validations[0].reason: Unsupported value: "Nope"',
    ),
    (
        "fieldPath to nowhere",
        _spec(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": "true", "fieldPath": ".b"}],
            }
        ),
        f"{F}.x-kubernetes-validations[0].fieldPath: Invalid value",
    ),
    (
        "metadata with more than name",
        {
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}
            },
        },
        "openAPIV3Schema.properties[metadata]: Forbidden: must not "
        "specify anything other than name and generateName",
    ),
]


@pytest.mark.parametrize(("schema", "expected"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_invalid_schemas_are_rejected_naming_the_path(
    schema: dict[str, Any], expected: str
) -> None:
    with pytest.raises(SchemaError) as info:
        StructuralSchema.compile(schema)
    assert expected in str(info.value)


GOOD = [
    ("int-or-string", _spec({"x-kubernetes-int-or-string": True})),
    ("preserve unknown without type", _spec({"x-kubernetes-preserve-unknown-fields": True})),
    (
        "additionalProperties true beside properties",
        _spec(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": True,
            }
        ),
    ),
    ("allOf value validations need no type", _spec({"type": "integer", "allOf": [{"minimum": 1}]})),
    (
        "list-map key with a default",
        _spec(
            {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["p"],
                "items": {
                    "type": "object",
                    "properties": {"p": {"type": "string", "default": "TCP"}},
                },
            }
        ),
    ),
    (
        "metadata name constraints",
        {
            "type": "object",
            "properties": {
                "metadata": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "maxLength": 10}},
                }
            },
        },
    ),
    (
        "fieldPath with brackets",
        _spec(
            {
                "type": "object",
                "properties": {"x": {"type": "object", "properties": {"a.b": {"type": "string"}}}},
                "x-kubernetes-validations": [{"rule": "true", "fieldPath": ".x['a.b']"}],
            }
        ),
    ),
]


@pytest.mark.parametrize("schema", [c[1] for c in GOOD], ids=[c[0] for c in GOOD])
def test_valid_schemas_compile(schema: dict[str, Any]) -> None:
    assert StructuralSchema.compile(schema).node.type == "object"


def test_the_path_prefix_is_configurable() -> None:
    with pytest.raises(SchemaError, match=r"^spec\.versions\[0\]\.schema\.openAPIV3Schema\.type"):
        StructuralSchema.compile({}, path="spec.versions[0].schema.openAPIV3Schema")
