"""JSON Patch as RFC 6902 defines it (the operations kustomize patches use)."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim.cluster.jsonpatch import JsonPatchError, apply_patch

DOC = {"spec": {"env": [{"name": "A", "value": "1"}], "a/b": 1, "m~n": 2}}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        (
            [{"op": "add", "path": "/spec/env/-", "value": {"name": "B"}}],
            {"spec": {"env": [{"name": "A", "value": "1"}, {"name": "B"}], "a/b": 1, "m~n": 2}},
        ),
        (
            [{"op": "add", "path": "/spec/env/0", "value": 0}],
            {"spec": {"env": [0, {"name": "A", "value": "1"}], "a/b": 1, "m~n": 2}},
        ),
        (
            [{"op": "replace", "path": "/spec/env/0/value", "value": "2"}],
            {"spec": {"env": [{"name": "A", "value": "2"}], "a/b": 1, "m~n": 2}},
        ),
        (
            [{"op": "remove", "path": "/spec/a~1b"}],
            {"spec": {"env": [{"name": "A", "value": "1"}], "m~n": 2}},
        ),
        (
            [{"op": "remove", "path": "/spec/m~0n"}],
            {"spec": {"env": [{"name": "A", "value": "1"}], "a/b": 1}},
        ),
        (
            [{"op": "move", "from": "/spec/a~1b", "path": "/x"}],
            {"spec": {"env": [{"name": "A", "value": "1"}], "m~n": 2}, "x": 1},
        ),
        ([{"op": "copy", "from": "/spec/env/0/name", "path": "/y"}], {**DOC, "y": "A"}),
        ([{"op": "test", "path": "/spec/env/0/name", "value": "A"}], DOC),
    ],
    ids=[
        "append",
        "insert",
        "replace",
        "remove escaped slash",
        "remove escaped tilde",
        "move",
        "copy",
        "test",
    ],
)
def test_operations(ops: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    assert apply_patch(DOC, ops) == expected


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ({"op": "test", "path": "/spec/env/0/name", "value": "B"}, "test failed"),
        ({"op": "replace", "path": "/spec/nope", "value": 1}, "no member 'nope'"),
        ({"op": "add", "path": "/spec/env/5", "value": 1}, "out of range"),
        ({"op": "remove", "path": "/spec/env/01"}, "not an array index"),
        ({"op": "frobnicate", "path": "/x"}, "unknown op"),
        ({"op": "add", "path": "x", "value": 1}, "starts with '/'"),
        ({"op": "add", "path": "/spec/env/0/name/x", "value": 1}, "not an object or array"),
    ],
    ids=[
        "failed test",
        "missing member",
        "index range",
        "leading zero",
        "unknown op",
        "bad pointer",
        "scalar parent",
    ],
)
def test_errors_name_the_operation(op: dict[str, Any], message: str) -> None:
    with pytest.raises(JsonPatchError, match=message) as info:
        apply_patch(DOC, [{"op": "add", "path": "/z", "value": 0}, op])
    assert "operation 1" in str(info.value)


def test_input_is_never_changed() -> None:
    before = repr(DOC)
    apply_patch(DOC, [{"op": "replace", "path": "/spec/env/0/value", "value": "9"}])
    assert repr(DOC) == before
