"""JSON Patch as RFC 6902 defines it: the one implementation, used by PATCH requests and by
kustomize patches; errors in kube-apiserver's words, carrying the failing operation's index."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim.apiserver.jsonpatch import JsonPatchError, json_patch

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
    assert json_patch(DOC, ops) == expected


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (
            {"op": "test", "path": "/spec/env/0/name", "value": "B"},
            "testing value /spec/env/0/name failed",
        ),
        ({"op": "replace", "path": "/spec/nope", "value": 1}, "replace operation does not apply"),
        ({"op": "add", "path": "/spec/env/5", "value": 1}, "Unable to access invalid index: 5"),
        ({"op": "remove", "path": "/spec/env/01"}, "invalid array index '01'"),
        ({"op": "frobnicate", "path": "/x"}, "Unexpected kind: frobnicate"),
        ({"op": "add", "path": "x", "value": 1}, "must be empty or start with a"),
        ({"op": "add", "path": "/spec/env/0/name/x", "value": 1}, "add operation does not apply"),
        ({"op": "remove", "path": "/spec/zz"}, "Unable to remove nonexistent key: zz"),
        ({"op": "add", "path": "/x"}, "add operation: missing value"),
        ({"op": "copy", "path": "/x"}, "copy operation: missing from"),
    ],
    ids=[
        "failed test",
        "missing member",
        "index range",
        "leading zero",
        "unknown op",
        "bad pointer",
        "scalar parent",
        "remove missing",
        "no value",
        "no from",
    ],
)
def test_errors_are_kube_apiservers_and_carry_the_operation(
    op: dict[str, Any], message: str
) -> None:
    with pytest.raises(JsonPatchError, match=message) as info:
        json_patch(DOC, [{"op": "add", "path": "/z", "value": 0}, op])
    assert info.value.operation == 1


def test_a_patch_that_is_not_a_list_is_refused_as_a_whole() -> None:
    with pytest.raises(JsonPatchError, match="cannot unmarshal object") as info:
        json_patch(DOC, {"op": "add"})
    assert info.value.operation is None


def test_input_is_never_changed() -> None:
    before = repr(DOC)
    json_patch(DOC, [{"op": "replace", "path": "/spec/env/0/value", "value": "9"}])
    assert repr(DOC) == before
