"""Defaulting and pruning of custom resources, compiled per schema into copy-on-walk closures.

Called by :class:`.schema.StructuralSchema`. Neither changes its input, and both share with it
what they leave as it was: pruning rebuilds what the schema describes but shares the subtrees it
keeps whole (``metadata``, preserved unknown fields); defaulting copies only the objects and
lists on the way to a default it adds or a null it drops, so an object that has its defaults
already (every update of a stored one) costs a walk and no copy.

Semantics follow apiextensions-apiserver:

- ``defaulting/prunenulls.go`` then ``defaulting/algorithm.go``: a ``null`` in a non-nullable field
  is dropped unless the field has a default, which then replaces it; a missing property with a
  default gets a copy of it (and that copy is defaulted in turn); defaults apply inside arrays
  and maps, but only where the parent object exists.
- ``pruning/algorithm.go``: fields the schema does not name are removed, except under
  ``x-kubernetes-preserve-unknown-fields``; ``apiVersion``/``kind``/``metadata`` survive at the
  root and in ``x-kubernetes-embedded-resource`` objects. Removed paths can be collected
  (``spec.foo``, ``spec.nodes[0].bar``) for ``unknown field`` warnings and strict field validation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from computedomain.api import jsoncodec
from computedomain_sim.apiserver.schema_nodes import Node

Defaulter = Callable[[Any], Any]
Pruner = Callable[[Any, "list[str] | None", str], Any]
_META_FIELDS: Final = frozenset({"apiVersion", "kind", "metadata"})


def compile_defaulter(node: Node | None) -> Defaulter:
    """The defaulting closure for ``node``: pure, returns the value itself when nothing in it
    changes, else a new value that shares its unchanged subtrees with the input."""
    if node is None:
        return _same
    props: dict[str, tuple[Defaulter, Node]] = {
        name: (compile_defaulter(sub), sub) for name, sub in node.properties.items()
    }
    with_default = tuple(
        (name, sub.default, props[name][0])
        for name, sub in node.properties.items()
        if sub.has_default
    )
    additional = (
        (compile_defaulter(node.additional), node.additional)
        if node.additional is not None
        else None
    )
    items = (compile_defaulter(node.items), node.items) if node.items is not None else None

    def apply(value: Any) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] | None = None  # the copy, made at the first change
            for key, sub_value in value.items():
                entry = props.get(key) or additional
                if entry is None:
                    continue
                sub_apply, sub_node = entry
                if sub_value is None and not sub_node.nullable:
                    new = (
                        sub_apply(jsoncodec.copy(sub_node.default))
                        if sub_node.has_default
                        else _DROPPED  # PruneNonNullableNullsWithoutDefaults
                    )
                else:
                    new = sub_apply(sub_value)
                    if new is sub_value:
                        continue
                if out is None:
                    out = dict(value)
                if new is _DROPPED:
                    del out[key]
                else:
                    out[key] = new
            for key, default, sub_apply in with_default:
                if key not in value:
                    if out is None:
                        out = dict(value)
                    out[key] = sub_apply(jsoncodec.copy(default))
            return value if out is None else out
        if isinstance(value, list) and items is not None:
            item_apply, item_node = items
            replaced: list[Any] | None = None
            for i, v in enumerate(value):
                if v is None and not item_node.nullable and item_node.has_default:
                    new_item = item_apply(jsoncodec.copy(item_node.default))
                else:
                    new_item = item_apply(v)
                    if new_item is v:
                        continue
                if replaced is None:
                    replaced = list(value)
                replaced[i] = new_item
            return value if replaced is None else replaced
        return value

    return apply


_DROPPED: Final = object()


def _same(value: Any) -> Any:
    return value


def _record(unknown: list[str] | None, path: str, key: str) -> None:
    if unknown is not None:
        unknown.append(f"{path}.{key}" if path else key)


def _sub(path: str, key: str, unknown: list[str] | None) -> str:
    return (f"{path}.{key}" if path else key) if unknown is not None else ""


def compile_pruner(node: Node | None, *, root: bool = False) -> Pruner:
    """The pruning closure for ``node``; does not change its input, and returns a new value
    that shares the subtrees it keeps whole with it.

    Call it as ``prune(value, unknown, path)``; when ``unknown`` is a list, the paths of removed
    fields are appended to it.
    """
    if node is None:
        return _prune_unknown
    if node.preserve_unknown:
        return _compile_skip_pruner(node)
    props = {name: compile_pruner(sub) for name, sub in node.properties.items()}
    additional = compile_pruner(node.additional) if node.additional is not None else None
    items = compile_pruner(node.items)
    keep_meta = root or node.embedded

    def prune(value: Any, unknown: list[str] | None, path: str) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, sub_value in value.items():
                if keep_meta and key in _META_FIELDS:
                    out[key] = sub_value
                    continue
                sub_prune = props.get(key) or additional
                if sub_prune is not None:
                    out[key] = sub_prune(sub_value, unknown, _sub(path, key, unknown))
                else:
                    _record(unknown, path, key)
            return out
        if isinstance(value, list):
            return [items(v, unknown, f"{path}[{i}]") for i, v in enumerate(value)]
        return value

    return prune


def _prune_unknown(value: Any, unknown: list[str] | None, path: str) -> Any:
    """Pruning with no schema: every object key goes."""
    if isinstance(value, dict):
        for key in value:
            _record(unknown, path, key)
        return {}
    if isinstance(value, list):
        return [_prune_unknown(v, unknown, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def _compile_skip_pruner(node: Node | None) -> Pruner:
    """Pruning under x-kubernetes-preserve-unknown-fields: unknown keys stay, known subtrees are
    still pruned by their own schemas (upstream's ``skipPrune``)."""
    if node is None:
        return lambda value, unknown, path: value
    props = {name: compile_pruner(sub) for name, sub in node.properties.items()}
    additional = compile_pruner(node.additional) if node.additional is not None else None
    items = _compile_skip_pruner(node.items)
    embedded = node.embedded

    def prune(value: Any, unknown: list[str] | None, path: str) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, sub_value in value.items():
                sub_prune = (
                    None if embedded and key in _META_FIELDS else props.get(key) or additional
                )
                if sub_prune is None:
                    out[key] = sub_value
                else:
                    out[key] = sub_prune(sub_value, unknown, _sub(path, key, unknown))
            return out
        if isinstance(value, list):
            return [items(v, unknown, f"{path}[{i}]") for i, v in enumerate(value)]
        return value

    return prune
