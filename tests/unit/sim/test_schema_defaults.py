"""Defaulting and pruning of custom resources, as apiextensions-apiserver does them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from computedomain_sim.apiserver.schema import StructuralSchema

ITEM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "mode": {"type": "string", "default": "Single"}},
}
SCHEMA = StructuralSchema.compile(
    {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "replicas": {"type": "integer", "default": 1},
                    "nullableWithDefault": {"type": "string", "nullable": True, "default": "d"},
                    "nested": {
                        "type": "object",
                        "default": {},
                        "properties": {"level": {"type": "string", "default": "info"}},
                    },
                    "optional": {
                        "type": "object",
                        "properties": {"inner": {"type": "integer", "default": 7}},
                    },
                    "items": {"type": "array", "items": ITEM},
                    "byName": {"type": "object", "additionalProperties": ITEM},
                    "plain": {"type": "string"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "freeWithKnown": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                        "properties": {
                            "known": {"type": "object", "properties": {"a": {"type": "string"}}}
                        },
                    },
                    "template": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": True,
                        "properties": {
                            "spec": {"type": "object", "properties": {"x": {"type": "string"}}}
                        },
                    },
                },
            },
        },
    }
)

DEFAULT_CASES = [
    (
        "missing fields get defaults",
        {"spec": {}},
        {"spec": {"replicas": 1, "nullableWithDefault": "d", "nested": {"level": "info"}}},
    ),
    (
        "present values stay",
        {"spec": {"replicas": 3, "nested": {"level": "debug"}}},
        {"spec": {"replicas": 3, "nested": {"level": "debug"}, "nullableWithDefault": "d"}},
    ),
    (
        "null in non-nullable field with default is defaulted",
        {"spec": {"replicas": None}},
        {"spec": {"replicas": 1, "nullableWithDefault": "d", "nested": {"level": "info"}}},
    ),
    (
        "null in nullable field stays",
        {"spec": {"nullableWithDefault": None}},
        {"spec": {"nullableWithDefault": None, "replicas": 1, "nested": {"level": "info"}}},
    ),
    (
        "null in non-nullable field without default is dropped",
        {"spec": {"plain": None}},
        {"spec": {"replicas": 1, "nullableWithDefault": "d", "nested": {"level": "info"}}},
    ),
    (
        "no defaults under an absent parent",
        {"spec": {"optional": {}}},
        {
            "spec": {
                "optional": {"inner": 7},
                "replicas": 1,
                "nullableWithDefault": "d",
                "nested": {"level": "info"},
            }
        },
    ),
    (
        "defaults inside array items",
        {"spec": {"items": [{"name": "a"}, {"name": "b", "mode": "All"}]}},
        {
            "spec": {
                "items": [{"name": "a", "mode": "Single"}, {"name": "b", "mode": "All"}],
                "replicas": 1,
                "nullableWithDefault": "d",
                "nested": {"level": "info"},
            }
        },
    ),
    (
        "defaults inside map values",
        {"spec": {"byName": {"x": {}}}},
        {
            "spec": {
                "byName": {"x": {"mode": "Single"}},
                "replicas": 1,
                "nullableWithDefault": "d",
                "nested": {"level": "info"},
            }
        },
    ),
    ("no spec, no spec defaults", {"kind": "X"}, {"kind": "X"}),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in DEFAULT_CASES], ids=[c[0] for c in DEFAULT_CASES]
)
def test_default(obj: dict[str, Any], expected: dict[str, Any]) -> None:
    before = copy.deepcopy(obj)
    assert SCHEMA.default(obj) == expected
    assert obj == before, "default() must not change its input"


def test_defaults_are_copies() -> None:
    first = SCHEMA.default({"spec": {}})
    first["spec"]["nested"]["level"] = "changed"
    assert SCHEMA.default({"spec": {}})["spec"]["nested"] == {"level": "info"}


def test_an_object_with_its_defaults_is_not_copied() -> None:
    defaulted = SCHEMA.default({"spec": {}, "metadata": {"name": "a"}})
    assert SCHEMA.default(defaulted) is defaulted
    changed = SCHEMA.default({**defaulted, "spec": {**defaulted["spec"], "nested": None}})
    assert changed["spec"]["nested"] == {"level": "info"}
    assert changed["metadata"] is defaulted["metadata"]  # shared, being unchanged
    assert defaulted["spec"]["nested"] == {"level": "info"}


PRUNE_CASES = [
    (
        "unknown fields go",
        {"spec": {"plain": "x", "bogus": 1}, "extra": True},
        {"spec": {"plain": "x"}},
        ["extra", "spec.bogus"],
    ),
    (
        "root meta fields stay",
        {"apiVersion": "v", "kind": "K", "metadata": {"name": "n", "anything": 1}},
        {"apiVersion": "v", "kind": "K", "metadata": {"name": "n", "anything": 1}},
        [],
    ),
    (
        "unknown inside items",
        {"spec": {"items": [{"name": "a", "zzz": 1}]}},
        {"spec": {"items": [{"name": "a"}]}},
        ["spec.items[0].zzz"],
    ),
    (
        "preserve-unknown keeps all",
        {"spec": {"free": {"a": {"b": [1, {"c": 2}]}}}},
        {"spec": {"free": {"a": {"b": [1, {"c": 2}]}}}},
        [],
    ),
    (
        "known subtree under preserve-unknown is pruned",
        {"spec": {"freeWithKnown": {"other": 1, "known": {"a": "x", "b": "y"}}}},
        {"spec": {"freeWithKnown": {"other": 1, "known": {"a": "x"}}}},
        ["spec.freeWithKnown.known.b"],
    ),
    (
        "embedded resource keeps its meta fields",
        {
            "spec": {
                "template": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"x": "1", "y": "2"},
                    "status": {},
                }
            }
        },
        {
            "spec": {
                "template": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"x": "1"},
                }
            }
        },
        ["spec.template.spec.y", "spec.template.status"],
    ),
    (
        "nested meta field names are pruned",
        {"spec": {"optional": {"kind": "x", "inner": 1}}},
        {"spec": {"optional": {"inner": 1}}},
        ["spec.optional.kind"],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected", "unknown"), [c[1:] for c in PRUNE_CASES], ids=[c[0] for c in PRUNE_CASES]
)
def test_prune(obj: dict[str, Any], expected: dict[str, Any], unknown: list[str]) -> None:
    before = copy.deepcopy(obj)
    found: list[str] = []
    assert SCHEMA.prune(obj, unknown=found) == expected
    assert found == unknown
    assert obj == before, "prune() must not change its input"


def test_prune_without_tracking_gives_the_same_object() -> None:
    obj = {"spec": {"plain": "x", "bogus": 1}, "extra": True}
    assert SCHEMA.prune(obj) == {"spec": {"plain": "x"}}
