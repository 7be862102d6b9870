"""Uniqueness of ``x-kubernetes-list-type: set`` items and ``map`` keys, compiled per schema.

Called by :class:`.schema.StructuralSchema` after the OpenAPI pass, as apiextensions'
``listtype.ValidateListSetsAndMaps`` runs after kube-openapi. Only the first repeat of a value is
reported, at its index: ``status.nodes[1]: Duplicate value: {"name":"x"}`` (the bad value is
rendered as JSON since Kubernetes 1.34; earlier releases printed Go's
``map[string]interface {}{"name":"x"}``). Subtrees without any list-type set/map are never walked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from computedomain_sim.apiserver import schema_messages as msg
from computedomain_sim.apiserver.schema_nodes import Node
from computedomain_sim.apiserver.schema_validators import child_path
from computedomain_sim.apiserver.status import FieldCause

ListCheck = Callable[[Any, str, list[FieldCause]], None]
_UNSPECIFIED = object()  # an item without the key: all such items share one key value


def has_list_constraints(node: Node | None) -> bool:
    """Whether anything under ``node`` is a list-type set or map."""
    if node is None:
        return False
    if node.list_type in ("set", "map"):
        return True
    return (
        has_list_constraints(node.items)
        or has_list_constraints(node.additional)
        or any(has_list_constraints(sub) for sub in node.properties.values())
    )


def _scalar_key(value: Any) -> Any:
    """A hashable identity that keeps types apart (``1`` vs ``true`` vs ``"1"``)."""
    if isinstance(value, dict | list):
        return ("json", json.dumps(value, sort_keys=True, separators=(",", ":")))
    return (type(value).__name__ if not isinstance(value, float) else "int", value)


def _first_repeats(keys: list[Any]) -> list[int]:
    seen: dict[Any, int] = {}
    repeats = []
    for i, key in enumerate(keys):
        count = seen.get(key, 0)
        if count == 1:
            repeats.append(i)
        seen[key] = count + 1
    return repeats


def compile_list_checks(node: Node) -> ListCheck | None:
    """The list-type checker for ``node``'s subtree, or ``None`` when there is nothing to check."""
    if not has_list_constraints(node):
        return None
    items = compile_list_checks(node.items) if node.items is not None else None
    additional = compile_list_checks(node.additional) if node.additional is not None else None
    properties = tuple(
        (name, sub_check)
        for name, sub in node.properties.items()
        if (sub_check := compile_list_checks(sub)) is not None
    )
    list_type, keys = node.list_type, node.list_map_keys

    def check(value: Any, path: str, out: list[FieldCause]) -> None:
        if isinstance(value, list):
            if list_type == "set":
                for i in _first_repeats([_scalar_key(v) for v in value]):
                    out.append(msg.duplicate(f"{path}[{i}]", value[i]))
            elif list_type == "map":
                _check_map(value, keys, path, out)
            if items is not None:
                for i, item in enumerate(value):
                    items(item, f"{path}[{i}]", out)
        elif isinstance(value, dict):
            if additional is not None:
                for key, sub_value in value.items():
                    additional(sub_value, child_path(path, key), out)
            for name, sub_check in properties:
                if name in value:
                    sub_check(value[name], child_path(path, name), out)

    return check


def _check_map(value: list[Any], keys: tuple[str, ...], path: str, out: list[FieldCause]) -> None:
    for i, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            detail = "must be an object for an array of list-type map"
            out.append(msg.invalid(f"{path}[{i}]", item, detail))
            return
    identities = []
    shown = []
    for item in value:
        present = {k: item[k] for k in keys if isinstance(item, dict) and k in item}
        shown.append(present)
        identities.append(
            tuple(_scalar_key(present[k]) if k in present else _UNSPECIFIED for k in keys)
        )
    for i in _first_repeats(identities):
        out.append(msg.duplicate(f"{path}[{i}]", shown[i]))
