"""Invariants of the schema engine over generated objects."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain_sim.apiserver.schema import StructuralSchema
from tests.unit.sim.schema_crds import COMPUTE_DOMAIN, COMPUTE_DOMAIN_CLIQUE

CD = StructuralSchema.compile(COMPUTE_DOMAIN)
CLIQUE = StructuralSchema.compile(COMPUTE_DOMAIN_CLIQUE)
RICH = StructuralSchema.compile(
    {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "!has(self.n) || self.n < 100"}],
                "properties": {
                    "n": {"type": "number", "maximum": 10, "multipleOf": 0.5},
                    "s": {
                        "type": "string",
                        "pattern": "^[a-z]*$",
                        "maxLength": 4,
                        "format": "uuid",
                    },
                    "e": {"type": "string", "enum": ["a", "b"], "default": "a"},
                    "io": {"x-kubernetes-int-or-string": True},
                    "set": {
                        "type": "array",
                        "x-kubernetes-list-type": "set",
                        "items": {"type": "integer"},
                    },
                    "map": {
                        "type": "object",
                        "additionalProperties": {"type": "boolean", "nullable": True},
                    },
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        },
    }
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


def _shaped(schema_keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects that mostly use the schema's keys (so the walk goes deep) plus noise."""
    keys = st.sampled_from(schema_keys) | st.text(max_size=5)
    return st.recursive(
        st.dictionaries(keys, json_scalars, max_size=4),
        lambda children: st.dictionaries(
            keys, children | st.lists(children, max_size=3) | json_scalars, max_size=5
        ),
        max_leaves=25,
    )


CD_KEYS = [
    "apiVersion",
    "kind",
    "metadata",
    "spec",
    "status",
    "numNodes",
    "channel",
    "resourceClaimTemplate",
    "name",
    "allocationMode",
    "nodes",
    "ipAddress",
    "cliqueID",
    "index",
]
RICH_KEYS = ["spec", "n", "s", "e", "io", "set", "map", "free"]


@settings(max_examples=150, deadline=None)
@given(obj=json_values, old=json_values | st.none())
def test_validate_never_raises_on_arbitrary_json(obj: Any, old: Any) -> None:
    for schema in (CD, CLIQUE, RICH):
        assert isinstance(schema.validate(obj, old), list)


@settings(max_examples=150, deadline=None)
@given(obj=_shaped(CD_KEYS) | _shaped(RICH_KEYS), old=st.none() | _shaped(CD_KEYS))
def test_validate_never_raises_on_schema_shaped_objects(
    obj: dict[str, Any], old: dict[str, Any] | None
) -> None:
    for schema in (CD, RICH):
        causes = schema.validate(obj, old)
        assert all(c.message for c in causes)


@settings(max_examples=150, deadline=None)
@given(obj=_shaped(CD_KEYS) | _shaped(RICH_KEYS))
def test_default_after_prune_is_idempotent(obj: dict[str, Any]) -> None:
    for schema in (CD, RICH):
        once = schema.default(schema.prune(obj))
        assert schema.default(schema.prune(once)) == once
        assert schema.prune(schema.prune(obj)) == schema.prune(obj)


@settings(max_examples=100, deadline=None)
@given(obj=_shaped(CD_KEYS))
def test_pruning_reports_exactly_what_it_removed(obj: dict[str, Any]) -> None:
    unknown: list[str] = []
    pruned = CD.prune(obj, unknown=unknown)
    again: list[str] = []
    CD.prune(pruned, unknown=again)
    assert again == []
    assert (pruned == obj) == (unknown == [])


node_names = st.text(alphabet="abcdef", min_size=1, max_size=3)


def _node(name: str) -> dict[str, Any]:
    return {"name": name, "ipAddress": "10.0.0.1", "cliqueID": "", "index": -1, "status": "Ready"}


def _with_nodes(names: list[str]) -> dict[str, Any]:
    return {
        "spec": {"channel": {"resourceClaimTemplate": {"name": "t"}}},
        "status": {"status": "Ready", "nodes": [_node(n) for n in names]},
    }


@settings(max_examples=100, deadline=None)
@given(names=st.lists(node_names, unique=True, max_size=6))
def test_list_map_with_unique_keys_has_no_duplicate(names: list[str]) -> None:
    assert [
        c for c in CD.validate(_with_nodes(names), None) if c.reason == "FieldValueDuplicate"
    ] == []


@settings(max_examples=100, deadline=None)
@given(names=st.lists(node_names, min_size=1, max_size=6), data=st.data())
def test_list_map_with_a_repeated_key_reports_it(names: list[str], data: st.DataObject) -> None:
    repeated = data.draw(st.sampled_from(names))
    position = data.draw(st.integers(0, len(names)))
    with_repeat = [*names[:position], repeated, *names[position:]]
    duplicates = [
        c for c in CD.validate(_with_nodes(with_repeat), None) if c.reason == "FieldValueDuplicate"
    ]
    repeats = {n for n in with_repeat if with_repeat.count(n) > 1}
    assert len(duplicates) == len(repeats)
    assert {c.message for c in duplicates} == {
        f'Duplicate value: {{"name":"{n}"}}' for n in repeats
    }
