"""``x-kubernetes-validations`` rules: evaluation, transition rules, wording."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim.apiserver.schema import StructuralSchema


def _with_rules(field: dict[str, Any], *rules: dict[str, Any]) -> StructuralSchema:
    field = {**field, "x-kubernetes-validations": list(rules)}
    return StructuralSchema.compile(
        {"type": "object", "properties": {"spec": {"type": "object", "properties": {"f": field}}}}
    )


def _run(schema: StructuralSchema, new: Any, old: Any = None) -> list[str]:
    old_obj = None if old is None else {"spec": {"f": old}}
    return [c.render() for c in schema.validate({"spec": {"f": new}}, old_obj)]


OBJ = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
CASES = [
    ("passing rule", {"type": "integer"}, {"rule": "self > 0"}, 3, None, []),
    (
        "failing rule on a scalar shows the value",
        {"type": "integer"},
        {"rule": "self > 0", "message": "must be positive"},
        -2,
        None,
        ["spec.f: Invalid value: -2: must be positive"],
    ),
    (
        "failing rule without message",
        {"type": "string"},
        {"rule": "self.startsWith('a')"},
        "b",
        None,
        ["spec.f: Invalid value: \"b\": failed rule: self.startsWith('a')"],
    ),
    (
        "failing rule on an object omits the value",
        OBJ,
        {"rule": "self.a < 5", "message": "a too big"},
        {"a": 9},
        None,
        ["spec.f: Invalid value: a too big"],
    ),
    (
        "messageExpression",
        {"type": "integer"},
        {"rule": "self < 10", "message": "static", "messageExpression": "'got ' + string(self)"},
        12,
        None,
        ["spec.f: Invalid value: 12: got 12"],
    ),
    (
        "failing messageExpression falls back to message",
        {"type": "integer"},
        {"rule": "self < 10", "message": "static", "messageExpression": "'x' + self.nope"},
        12,
        None,
        ["spec.f: Invalid value: 12: static"],
    ),
    (
        "fieldPath",
        OBJ,
        {"rule": "self.b != 'x'", "fieldPath": ".b", "message": "b must not be x"},
        {"b": "x"},
        None,
        ["spec.f.b: Invalid value: b must not be x"],
    ),
    (
        "reason Forbidden",
        OBJ,
        {"rule": "!has(self.b)", "reason": "FieldValueForbidden", "message": "b is not allowed"},
        {"b": "x"},
        None,
        ["spec.f: Forbidden: b is not allowed"],
    ),
    (
        "reason Required",
        OBJ,
        {"rule": "has(self.b)", "reason": "FieldValueRequired", "message": "b is needed"},
        {},
        None,
        ["spec.f: Required value: b is needed"],
    ),
    (
        "missing key is a runtime error",
        OBJ,
        {"rule": "self.b == 'x'"},
        {"a": 1},
        None,
        ["spec.f: Invalid value: \"object\": no such key: b evaluating rule: self.b == 'x'"],
    ),
    (
        "runtime error names the message when there is one",
        OBJ,
        {"rule": "self.b == 'x'", "message": "b must be x"},
        {"a": 1},
        None,
        ['spec.f: Invalid value: "object": no such key: b evaluating rule: b must be x'],
    ),
    (
        "no such overload at run time",
        {"x-kubernetes-int-or-string": True},
        {"rule": "self + 1 > 0"},
        "text",
        None,
        [
            "spec.f: Invalid value: \"\": 'no such overload': call arguments did not match a "
            "supported operator, function or macro signature for rule: self + 1 > 0"
        ],
    ),
    (
        "number fields are doubles",
        {"type": "number"},
        {"rule": "self == 2.0 && type(self) == double"},
        2,
        None,
        [],
    ),
    (
        "null values are not validated",
        {"type": "string", "nullable": True},
        {"rule": "self == 'a'"},
        None,
        None,
        [],
    ),
    (
        "transition rule skipped on create",
        {"type": "string"},
        {"rule": "self == oldSelf", "message": "immutable"},
        "a",
        None,
        [],
    ),
    (
        "transition rule on update",
        {"type": "string"},
        {"rule": "self == oldSelf", "message": "immutable"},
        "b",
        "a",
        ['spec.f: Invalid value: "b": immutable'],
    ),
    (
        "transition rule with ordering",
        {"type": "integer"},
        {"rule": "self >= oldSelf", "message": "may only grow"},
        2,
        5,
        ["spec.f: Invalid value: 2: may only grow"],
    ),
    (
        "oldSelf inside a string literal is not a transition",
        {"type": "string"},
        {"rule": "self != 'oldSelf'"},
        "oldSelf",
        None,
        ["spec.f: Invalid value: \"oldSelf\": failed rule: self != 'oldSelf'"],
    ),
    (
        "strings extension",
        {"type": "string"},
        {"rule": "self.lowerAscii() == self"},
        "ABC",
        None,
        ['spec.f: Invalid value: "ABC": failed rule: self.lowerAscii() == self'],
    ),
]


@pytest.mark.parametrize(
    ("field", "rule", "new", "old", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rules(
    field: dict[str, Any], rule: dict[str, Any], new: Any, old: Any, expected: list[str]
) -> None:
    assert _run(_with_rules(field, rule), new, old) == expected


LIST_MAP = {
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["name"],
    "items": {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "index": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "self.index == oldSelf.index", "message": "index is fixed"}
        ],
    },
}


def test_list_map_items_correlate_by_key() -> None:
    schema = StructuralSchema.compile({"type": "object", "properties": {"l": LIST_MAP}})
    old = {"l": [{"name": "a", "index": 0}, {"name": "b", "index": 1}]}
    reordered = {
        "l": [{"name": "b", "index": 1}, {"name": "a", "index": 0}, {"name": "c", "index": 0}]
    }
    assert schema.validate(reordered, old) == []
    changed = {"l": [{"name": "b", "index": 2}, {"name": "a", "index": 0}]}
    assert [c.render() for c in schema.validate(changed, old)] == [
        "l[0]: Invalid value: index is fixed"
    ]


def test_rules_are_skipped_after_blocking_errors() -> None:
    schema = _with_rules({"type": "integer", "enum": [1, 2]}, {"rule": "self == 1"})
    assert _run(schema, 3) == [
        'spec.f: Unsupported value: 3: supported values: "1", "2"',
        "<nil>: Invalid value: null: some validation rules were not checked because the object "
        "was invalid; correct the existing errors to complete validation",
    ]


def test_non_blocking_errors_still_run_rules() -> None:
    schema = _with_rules(
        {"type": "integer", "minimum": 0}, {"rule": "self % 2 == 0", "message": "even"}
    )
    assert _run(schema, -1) == [
        "spec.f: Invalid value: -1: spec.f in body should be greater than or equal to 0",
        "spec.f: Invalid value: -1: even",
    ]


def test_unchanged_fields_ratchet_non_transition_rules() -> None:
    schema = _with_rules({"type": "integer"}, {"rule": "self > 10", "message": "too small"})
    assert _run(schema, 1, 1) == []
    assert _run(schema, 2, 1) == ["spec.f: Invalid value: 2: too small"]


def test_transition_rules_run_on_unchanged_fields_and_the_immutability_rule_holds() -> None:
    must_change = _with_rules({"type": "integer"}, {"rule": "self != oldSelf", "message": "bump"})
    assert _run(must_change, 1, 1) == ["spec.f: Invalid value: 1: bump"]
    immutable = _with_rules({"type": "integer"}, {"rule": " oldSelf==self ", "message": "fixed"})
    assert _run(immutable, 1, 1) == []
    assert _run(immutable, 2, 1) == ["spec.f: Invalid value: 2: fixed"]


def test_root_rule_sees_only_name_in_metadata() -> None:
    schema = StructuralSchema.compile(
        {
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
            "x-kubernetes-validations": [
                {
                    "rule": "self.metadata.name.startsWith('cd-')",
                    "message": "name must start with cd-",
                },
                {"rule": "!has(self.metadata.labels)", "message": "labels are not visible"},
            ],
        }
    )
    obj = {"metadata": {"name": "x", "labels": {"a": "b"}}, "spec": {}}
    assert [c.render() for c in schema.validate(obj, None)] == [
        "<nil>: Invalid value: name must start with cd-"
    ]
