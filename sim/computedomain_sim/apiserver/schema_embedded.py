"""Type meta of ``x-kubernetes-embedded-resource`` objects (an object inside a custom resource
that is itself a Kubernetes object, such as a pod template).

Called by :class:`.schema.StructuralSchema` after the OpenAPI pass, as apiextensions'
``objectmeta.Validate`` runs after kube-openapi: ``apiVersion`` and ``kind`` are required,
strings, non-empty, a parseable group/version and a DNS-1035 label in any case. The embedded
``metadata`` is not validated here (no ObjectMeta rules in this module). Subtrees without an
embedded resource are never walked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from computedomain_sim.apiserver import schema_messages as msg
from computedomain_sim.apiserver.schema_nodes import Node
from computedomain_sim.apiserver.schema_validators import child_path
from computedomain_sim.apiserver.status import FieldCause

EmbeddedCheck = Callable[[Any, str, list[FieldCause]], None]
_DNS1035: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MESSAGE: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def _has_embedded(node: Node | None) -> bool:
    if node is None:
        return False
    return (
        node.embedded
        or _has_embedded(node.items)
        or _has_embedded(node.additional)
        or any(_has_embedded(sub) for sub in node.properties.values())
    )


def _type_meta(value: dict[str, Any], path: str, out: list[FieldCause]) -> None:
    for key in ("apiVersion", "kind"):
        if key not in value:
            out.append(msg.required(child_path(path, key)))
            continue
        field, given = child_path(path, key), value[key]
        if not isinstance(given, str):
            out.append(msg.invalid(field, given, "must be a string"))
        elif not given:
            out.append(msg.invalid(field, given, "must not be empty"))
        elif key == "apiVersion" and given.count("/") > 1:
            out.append(msg.invalid(field, given, f"unexpected GroupVersion string: {given}"))
        elif key == "kind" and (len(given) > 63 or not _DNS1035.match(given.lower())):
            detail = f"may have mixed case, but should otherwise match: {_DNS1035_MESSAGE}"
            out.append(msg.invalid(field, given, detail))


def compile_embedded_checks(node: Node) -> EmbeddedCheck | None:
    """The embedded-resource checker for ``node``'s subtree, or ``None`` when it has none."""
    if not _has_embedded(node):
        return None
    items = compile_embedded_checks(node.items) if node.items is not None else None
    additional = compile_embedded_checks(node.additional) if node.additional is not None else None
    properties = tuple(
        (name, sub_check)
        for name, sub in node.properties.items()
        if (sub_check := compile_embedded_checks(sub)) is not None
    )
    embedded = node.embedded

    def check(value: Any, path: str, out: list[FieldCause]) -> None:
        if isinstance(value, dict):
            if embedded:
                _type_meta(value, path, out)
            if additional is not None:
                for key, sub_value in value.items():
                    additional(sub_value, child_path(path, key), out)
            for name, sub_check in properties:
                if name in value:
                    sub_check(value[name], child_path(path, name), out)
        elif isinstance(value, list) and items is not None:
            for i, item in enumerate(value):
                items(item, f"{path}[{i}]", out)

    return check
