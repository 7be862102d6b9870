"""Field sets: the set laws of union, difference and intersection over member paths, and what an
update changed agrees with the members before and after it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from computedomain_sim.apiserver import fieldsets

SHAPE = fieldsets.BuiltinShape()
_names = st.sampled_from(["a", "b", "labels", "containers", "finalizers", "image"])
_scalars = st.one_of(st.integers(0, 3), st.sampled_from(["x", "y"]), st.booleans())


def _values(depth: int = 3) -> st.SearchStrategy[Any]:
    if depth == 0:
        return _scalars
    inner = _values(depth - 1)
    containers = st.lists(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["p", "q", "r"])}, optional={"image": inner}
        ),
        max_size=3,
        unique_by=lambda c: c["name"],
    )
    return st.one_of(
        _scalars,
        st.dictionaries(_names, inner, max_size=3),
        st.fixed_dictionaries({"containers": containers}),
        st.fixed_dictionaries({"finalizers": st.lists(st.sampled_from(["f1", "f2"]), unique=True)}),
    )


_objects = st.dictionaries(_names, _values(), max_size=4)


def members(fields: fieldsets.FieldSet) -> set[tuple[str, ...]]:
    return set(fieldsets.leaves(fields))


@given(_objects, _objects)
def test_set_operations_follow_the_set_laws(one: dict[str, Any], two: dict[str, Any]) -> None:
    a, b = fieldsets.of_value(one, SHAPE), fieldsets.of_value(two, SHAPE)
    assert members(fieldsets.union(a, b)) == members(a) | members(b)
    assert members(fieldsets.difference(a, b)) == members(a) - members(b)
    assert members(fieldsets.intersection(a, b)) == members(a) & members(b)


@given(_objects, _objects)
def test_what_changed_explains_the_members_after(old: dict[str, Any], new: dict[str, Any]) -> None:
    added, removed = fieldsets.changed(old, new, SHAPE)
    before, after = members(fieldsets.of_value(old, SHAPE)), members(fieldsets.of_value(new, SHAPE))
    assert members(added) <= after
    assert not members(removed) & after
    assert (before - members(removed)) | members(added) == after
    if old == new:
        assert added == removed == {}


_IGNORE = {"a": True, "b": {"labels": True, "image": True}}


@given(_objects, _objects)
def test_ignored_fields_are_left_out_as_if_neither_object_had_them(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    left_old, left_new = fieldsets.without(old, _IGNORE), fieldsets.without(new, _IGNORE)
    assert fieldsets.changed(old, new, SHAPE, _IGNORE) == fieldsets.changed(
        left_old, left_new, SHAPE
    )


@given(_objects)
def test_every_member_is_found_and_removable(obj: dict[str, Any]) -> None:
    for path in members(fieldsets.of_value(obj, SHAPE)):
        found, _ = fieldsets.value_at(obj, path, SHAPE)
        assert found
        assert fieldsets.contains(fieldsets.of_value(obj, SHAPE), path)


def test_paths_print_as_kube_apiserver_prints_them() -> None:
    path = ("f:spec", "f:containers", 'k:{"name":"x"}', "f:ports", 'v:"p"', "f:image")
    assert fieldsets.path_string(path) == '.spec.containers[name="x"].ports[="p"].image'


def test_an_update_owns_a_custom_resources_objects_and_an_apply_only_their_leaves() -> None:
    """As kube-apiserver records them: an update that creates a custom resource's ``spec``
    owns ``spec`` itself (``.``); an apply owns the leaves it applied; a built-in struct is
    never a member itself."""
    from computedomain_sim.apiserver.schema_nodes import parse

    schema = parse({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}})  # fmt: skip
    custom = fieldsets.SchemaShape(schema, root=True)
    value = {"spec": {"size": 2}}
    assert fieldsets.of_value(value, custom) == {"f:spec": {".": {}, "f:size": {}}}
    assert fieldsets.of_value(value, custom, apply=True) == {"f:spec": {"f:size": {}}}
    assert fieldsets.of_value({"spec": {"replicas": 2}}, SHAPE) == {"f:spec": {"f:replicas": {}}}
