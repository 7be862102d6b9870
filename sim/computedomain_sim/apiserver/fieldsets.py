"""Sets of field paths in the ``FieldsV1`` form of ``metadata.managedFields``, and the shapes of
objects they are computed over.

A set is a nested dict, exactly as stored: ``f:<name>`` for a field of an object, ``k:<json>``
for an item of a list keyed by its map keys, ``v:<json>`` for an item of a set list, and ``.``
for a map or list item that is itself a member beside its children; ``{}`` is a leaf. Working
on the stored form means no conversion on the write path, where every update computes what it
changed. A :class:`Shape` says which lists are keyed, which are sets and which are atomic, and
which objects are maps (members themselves) rather than structs: from a CRD's structural schema,
or, for built-in kinds, from the merge keys the strategic merge patch already knows.
Pure; used by :mod:`.managedfields`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final

from .schema_nodes import Node
from .strategic import MERGE_KEYS, PRIMITIVE_MERGE

FieldSet = dict[str, Any]
# Fields of two objects nobody owns (True), or whose own fields are ignored in turn.
Ignored = dict[str, Any]
SELF: Final = "."
_ABSENT: Final = object()

# Built-in fields that are maps (string -> value), not structs: a set map is a member itself.
_BUILTIN_MAPS: Final = frozenset(
    {
        "labels", "annotations", "nodeSelector", "matchLabels", "data", "binaryData",
        "stringData", "requests", "limits", "capacity", "allocatable", "hard", "used",
        "parameters", "selector", "attributes", "overhead", "sysctls",
    }
)  # fmt: skip
# Keyed lists whose key has more than one field in the built-in types.
_BUILTIN_KEYS: Final = {"ports": ("containerPort", "protocol")}
_KEY_DEFAULTS: Final = {("ports", "protocol"): "TCP"}


class Shape:
    """How one node of an object is structured. The base shape (a struct whose lists are
    atomic) is what an unknown part of a built-in kind gets."""

    def child(self, name: str) -> Shape:
        return _BUILTIN_ROOT.child(name)

    def list_keys(self) -> tuple[str, ...] | None:
        """The map keys of a keyed list, ``()`` for a set list, ``None`` for an atomic one."""
        return None

    def item(self) -> Shape:
        return self

    def is_map(self) -> bool:
        return False


class BuiltinShape(Shape):
    """A field of a built-in kind, known by its name."""

    def __init__(self, name: str = "") -> None:
        self.name = name

    def child(self, name: str) -> Shape:
        return BuiltinShape(name)

    def list_keys(self) -> tuple[str, ...] | None:
        if self.name in _BUILTIN_KEYS:
            return _BUILTIN_KEYS[self.name]
        if self.name in MERGE_KEYS:
            return (MERGE_KEYS[self.name],)
        if self.name in PRIMITIVE_MERGE:
            return ()
        return None

    def item(self) -> Shape:
        return BuiltinShape(f"{self.name}[]")

    def is_map(self) -> bool:
        return self.name in _BUILTIN_MAPS


_BUILTIN_ROOT: Final = BuiltinShape()


class SchemaShape(Shape):
    """A node of a CRD's structural schema (lists are atomic unless the schema says otherwise,
    as for custom resources in Kubernetes). ``metadata`` follows the built-in rules."""

    def __init__(self, node: Node | None, *, root: bool = False) -> None:
        self.node = node
        self.root = root

    def child(self, name: str) -> Shape:
        if self.root and name == "metadata":
            return BuiltinShape("metadata")
        node = self.node
        if node is None:
            return SchemaShape(None)
        if name in node.properties:
            return SchemaShape(node.properties[name])
        return SchemaShape(node.additional)

    def list_keys(self) -> tuple[str, ...] | None:
        node = self.node
        if node is None:
            return None
        if node.list_type == "map":
            return node.list_map_keys
        if node.list_type == "set":
            return ()
        return None

    def item(self) -> Shape:
        return SchemaShape(self.node.items if self.node is not None else None)

    def is_map(self) -> bool:
        node = self.node
        return node is not None and not node.properties and node.additional is not None


def atomic_map(shape: Shape) -> bool:
    return (
        isinstance(shape, SchemaShape)
        and shape.node is not None
        and (shape.node.map_type == "atomic")
    )


def atomic(value: Any, shape: Shape) -> bool:
    """Whether ``value`` is owned whole: an atomic map of a schema, or a built-in ``selector``:
    a LabelSelector (``{matchLabels, matchExpressions}``, an atomic struct in Kubernetes'
    types) or a plain map (a Service's or a ReplicationController's, ``+mapType=atomic``)."""
    if atomic_map(shape):
        return True
    return (
        isinstance(shape, BuiltinShape)
        and shape.name == "selector"
        and isinstance(value, dict)
        and bool(value)
    )


def item_key(value: Any, keys: tuple[str, ...], field: str = "") -> str:
    """The ``k:``/``v:`` element of one list item."""
    if not keys:
        return "v:" + json.dumps(value, separators=(",", ":"))
    if not isinstance(value, dict):
        return "v:" + json.dumps(value, separators=(",", ":"))
    if field == "ports" and "containerPort" not in value and "port" in value:
        keys = ("port", "protocol")  # a Service's ports, not a container's
    key = {}
    for name in sorted(keys):
        if name in value:
            key[name] = value[name]
        elif (field, name) in _KEY_DEFAULTS:
            key[name] = _KEY_DEFAULTS[(field, name)]
    return "k:" + json.dumps(key, separators=(",", ":"))


def _field_name(shape: Shape) -> str:
    return shape.name if isinstance(shape, BuiltinShape) else ""


def of_value(value: Any, shape: Shape, *, apply: bool = False) -> FieldSet:
    """Every member path of ``value``'s children (``value`` itself is not included). An
    applied configuration (``apply``) owns its leaves and list items, not the maps and lists
    holding them, as kube-apiserver records an Apply."""
    out: FieldSet = {}
    if isinstance(value, dict) and not atomic(value, shape):
        for name, sub in value.items():
            out["f:" + name] = _member(sub, shape.child(name), apply=apply)
    elif isinstance(value, list):
        keys = shape.list_keys()
        if keys is not None:
            item = shape.item()
            for sub in value:
                key = item_key(sub, keys, _field_name(shape))
                out[key] = _member(sub, item, item=True, apply=apply)
    return out


def _member(value: Any, shape: Shape, *, item: bool = False, apply: bool = False) -> FieldSet:
    """The set under one member: its children, marked itself for list items and (but in an
    applied configuration) for maps and non-empty lists."""
    children = of_value(value, shape, apply=apply)
    if children and (item or (not apply and _container(value, shape))):
        children[SELF] = {}
    return children


def _container(value: Any, shape: Shape) -> bool:
    """Whether an update that sets ``value`` owns the node itself beside its children: maps
    and lists; and a custom resource's objects, which, unlike a built-in kind's structs, do
    not exist in the empty object an update is compared with."""
    if isinstance(value, list) or shape.is_map():
        return True
    return isinstance(shape, SchemaShape) and isinstance(value, dict)


def _granular(value: Any, shape: Shape) -> bool:
    """Whether ``value`` has members of its own (a non-atomic object, a keyed or set list)."""
    if isinstance(value, dict):
        return not atomic(value, shape)
    return isinstance(value, list) and shape.list_keys() is not None


def _self_member(value: Any, shape: Shape, item: bool) -> bool:
    """Whether a value is a member itself (as :func:`_member` marks it), without walking it."""
    if item or not _granular(value, shape) or not value:
        return True
    return _container(value, shape)


def changed(
    old: Any, new: Any, shape: Shape, ignore: Ignored | None = None
) -> tuple[FieldSet, FieldSet]:
    """(members of ``new`` that are new or have another value, members of ``old`` gone in
    ``new``), below the node both are at (two objects, or two lists, with members). Equal
    subtrees are skipped at once, before anything is built for them: an ordinary update changes
    a few fields of a large object. ``ignore`` names the fields of two objects that nobody owns
    (``True``), or whose own fields are ignored as it says in turn: they are left out as if
    neither object had them, without copying either."""
    added: FieldSet = {}
    removed: FieldSet = {}
    if isinstance(new, dict):
        for name, new_value in new.items():
            old_value = old.get(name, _ABSENT)
            if old_value is new_value:
                continue
            sub_ignore = ignore.get(name) if ignore else None
            if sub_ignore is True:
                continue
            if old_value is _ABSENT:
                node = _present(new_value, shape.child(name), sub_ignore)
                if node is not None:
                    added["f:" + name] = node
            elif old_value != new_value:
                if _scalar(old_value) and _scalar(new_value):
                    added["f:" + name] = {}  # a leaf that changed
                    continue
                sub_shape = shape.child(name)
                _compare(
                    "f:" + name, old_value, new_value, sub_shape, (added, removed),
                    item=False, ignore=sub_ignore,
                )  # fmt: skip
        if old.keys() - new.keys():
            for name, old_value in old.items():
                if name in new:
                    continue
                sub_ignore = ignore.get(name) if ignore else None
                if sub_ignore is True:
                    continue
                node = _present(old_value, shape.child(name), sub_ignore)
                if node is not None:
                    removed["f:" + name] = node
        return added, removed
    old_children = _children(old, shape)
    new_children = _children(new, shape)
    for key, (new_value, sub_shape) in new_children.items():
        previous = old_children.get(key)
        if previous is None:
            added[key] = _member(new_value, sub_shape, item=True)
        elif previous[0] != new_value:
            _compare(key, previous[0], new_value, sub_shape, (added, removed), item=True)
    for key, (old_value, sub_shape) in old_children.items():
        if key not in new_children:
            removed[key] = _member(old_value, sub_shape, item=True)
    return added, removed


def without(obj: dict[str, Any], ignore: Ignored) -> dict[str, Any]:
    """``obj`` without the fields ``ignore`` names (as :func:`changed` leaves them out); a
    field left empty by its own ignored fields is left out too."""
    out: dict[str, Any] = {}
    for name, value in obj.items():
        sub_ignore = ignore.get(name)
        if sub_ignore is True:
            continue
        if not sub_ignore:
            out[name] = value
        elif _kept(value, sub_ignore):
            out[name] = _without(value, sub_ignore)
    return out


def _without(value: Any, ignore: Ignored) -> Any:
    return without(value, ignore) if isinstance(value, dict) else value


def _present(
    value: Any, shape: Shape, ignore: Ignored | None, *, item: bool = False
) -> FieldSet | None:
    """The member set of ``value`` once ``ignore`` is left out; ``None`` when nothing is left."""
    if ignore:
        if not _kept(value, ignore):
            return None
        value = _without(value, ignore)
    return _member(value, shape, item=item)


def _kept(value: Any, ignore: Ignored) -> bool:
    """Whether anything of ``value`` is left once ``ignore`` is left out (without copying)."""
    if not isinstance(value, dict):
        return True
    for name, sub in value.items():
        sub_ignore = ignore.get(name)
        if sub_ignore is not True and (not sub_ignore or _kept(sub, sub_ignore)):
            return True
    return False


def _scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _compare(
    key: str,
    old_value: Any,
    new_value: Any,
    shape: Shape,
    into: tuple[FieldSet, FieldSet],
    *,
    item: bool,
    ignore: Ignored | None = None,
) -> None:
    """Record in ``into`` (added, removed) how the member ``key`` changed (its values differ)."""
    added, removed = into
    if ignore and not (_kept(old_value, ignore) and _kept(new_value, ignore)):
        for side, value in ((added, new_value), (removed, old_value)):  # one side at most
            node = _present(value, shape, ignore, item=item)
            if node is not None:
                side[key] = node
        return
    both = _granular(old_value, shape) and _granular(new_value, shape)
    if not both or type(old_value) is not type(new_value):
        if ignore:
            old_value, new_value = _without(old_value, ignore), _without(new_value, ignore)
        present = _member(new_value, shape, item=item)
        added[key] = present
        gone = difference({key: _member(old_value, shape, item=item)}, {key: present})
        if gone:
            removed[key] = gone[key]
        return
    sub_added, sub_removed = changed(old_value, new_value, shape, ignore)
    was = item or not old_value or _container(old_value, shape)  # _self_member, both granular
    is_ = item or not new_value or _container(new_value, shape)
    node = _join(is_ and not was, sub_added)
    if node is not None:
        added[key] = node
    node = _join(was and not is_, sub_removed)
    if node is not None:
        removed[key] = node


def _children(value: Any, shape: Shape) -> dict[str, tuple[Any, Shape]]:
    if isinstance(value, dict) and not atomic(value, shape):
        return {"f:" + name: (sub, shape.child(name)) for name, sub in value.items()}
    if isinstance(value, list):
        keys = shape.list_keys()
        if keys is not None:
            item = shape.item()
            return {item_key(sub, keys, _field_name(shape)): (sub, item) for sub in value}
    return {}


def _split(node: FieldSet) -> tuple[bool, FieldSet]:
    """(whether the node itself is a member, its member children)."""
    if not node:
        return True, {}
    if SELF in node:
        return True, {k: v for k, v in node.items() if k != SELF}
    return False, node


def _join(member: bool, children: FieldSet) -> FieldSet | None:
    if not children:
        return {} if member else None
    return {SELF: {}, **children} if member else children


def union(a: FieldSet, b: FieldSet) -> FieldSet:
    """Every member of ``a`` or ``b``."""
    out = dict(a)
    for key, sub in b.items():
        if key not in out:
            out[key] = sub
            continue
        a_self, a_children = _split(out[key])
        b_self, b_children = _split(sub)
        joined = _join(a_self or b_self, union(a_children, b_children))
        out[key] = joined if joined is not None else {}
    return out


def covers(a: FieldSet, b: FieldSet) -> bool:
    """Whether every member of ``b`` is a member of ``a`` (what :func:`union` would leave as
    ``a``), without building anything."""
    for key, sub in b.items():
        if key == SELF:
            continue
        if key not in a:
            return False
        a_self, a_children = _split(a[key])
        b_self, b_children = _split(sub)
        if (b_self and not a_self) or not covers(a_children, b_children):
            return False
    return True


def difference(a: FieldSet, b: FieldSet) -> FieldSet:
    """The members of ``a`` that are not members of ``b``."""
    out: FieldSet = {}
    for key, sub in a.items():
        if key not in b:
            out[key] = sub
            continue
        a_self, a_children = _split(sub)
        b_self, b_children = _split(b[key])
        joined = _join(a_self and not b_self, difference(a_children, b_children))
        if joined is not None:
            out[key] = joined
    return out


def intersection(a: FieldSet, b: FieldSet) -> FieldSet:
    """The members of both ``a`` and ``b``."""
    out: FieldSet = {}
    for key, sub in a.items():
        if key not in b:
            continue
        a_self, a_children = _split(sub)
        b_self, b_children = _split(b[key])
        joined = _join(a_self and b_self, intersection(a_children, b_children))
        if joined is not None:
            out[key] = joined
    return out


def leaves(fields: FieldSet, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every member path: the leaves, and the nodes marked with ``.``."""
    for key, sub in fields.items():
        if key == SELF:
            yield prefix
        elif not sub:
            yield (*prefix, key)
        else:
            yield from leaves(sub, (*prefix, key))


def contains(fields: FieldSet, path: tuple[str, ...]) -> bool:
    node = fields
    for element in path:
        if element not in node:
            return False
        node = node[element]
    return not node or SELF in node


def value_at(obj: Any, path: tuple[str, ...], shape: Shape) -> tuple[bool, Any]:
    """(found, value) of the member at ``path``."""
    current = obj
    for element in path:
        found = _children(current, shape).get(element)
        if found is None:
            return False, None
        current, shape = found
    return True, current


def remove(obj: Any, path: tuple[str, ...], shape: Shape) -> None:
    """Remove the member at ``path`` from ``obj`` in place (nothing when absent)."""
    if not path:
        return
    current, parent_shape = obj, shape
    for element in path[:-1]:
        found = _children(current, parent_shape).get(element)
        if found is None:
            return
        current, parent_shape = found
    last = path[-1]
    if isinstance(current, dict) and last.startswith("f:"):
        current.pop(last[2:], None)
    elif isinstance(current, list):
        keys = parent_shape.list_keys()
        if keys is None:
            return
        field = _field_name(parent_shape)
        current[:] = [item for item in current if item_key(item, keys, field) != last]


def path_string(path: tuple[str, ...]) -> str:
    """A path as kube-apiserver prints it in conflicts: ``.spec.containers[name="x"].image``."""
    parts = []
    for element in path:
        kind, _, text = element.partition(":")
        if kind == "f":
            parts.append("." + text)
        elif kind == "k":
            key = json.loads(text)
            inner = ",".join(f"{name}={json.dumps(value)}" for name, value in key.items())
            parts.append(f"[{inner}]")
        elif kind == "v":
            parts.append(f"[={text}]")
        elif kind == "i":
            parts.append(f"[{text}]")
    return "".join(parts)
