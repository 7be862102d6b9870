"""Structural schemas of CustomResourceDefinitions: defaulting, pruning and validation of custom
resources as kube-apiserver does them, including ``x-kubernetes-validations`` CEL rules.

The embedded API server compiles one :class:`StructuralSchema` per CRD version when the CRD is
stored (a schema kube-apiserver would reject raises :class:`SchemaError`), then per write calls
:meth:`~StructuralSchema.prune` and :meth:`~StructuralSchema.default` on the decoded body and
:meth:`~StructuralSchema.validate` on the result, turning the causes into a 422 with
:func:`.status.invalid`.

The work is split by concern: :mod:`.schema_nodes` parses and checks the schema,
:mod:`.schema_validators` (OpenAPI values, with :mod:`.schema_formats` and
:mod:`.schema_regex`), :mod:`.schema_embedded` (embedded resources' type meta),
:mod:`.schema_listtype` (set/map uniqueness) and :mod:`.schema_cel` (rules) validate,
:mod:`.schema_defaults` defaults and prunes, :mod:`.schema_messages` words the causes.
Everything is compiled into closures once, so a write costs a walk of the object and no schema
interpretation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from computedomain_sim.apiserver import schema_messages
from computedomain_sim.apiserver.schema_cel import compile_cel_checks
from computedomain_sim.apiserver.schema_defaults import compile_defaulter, compile_pruner
from computedomain_sim.apiserver.schema_embedded import compile_embedded_checks
from computedomain_sim.apiserver.schema_listtype import compile_list_checks
from computedomain_sim.apiserver.schema_nodes import Node, SchemaError, parse
from computedomain_sim.apiserver.schema_validators import (
    NO_OLD,
    compile_checks,
    prefixed_field_namer,
)
from computedomain_sim.apiserver.status import FieldCause

__all__ = ["SchemaError", "StructuralSchema"]


class StructuralSchema:
    """A compiled CRD version schema. Immutable after :meth:`compile`; safe to share."""

    __slots__ = (
        "_cel",
        "_check",
        "_default",
        "_embedded_check",
        "_list_check",
        "_prune",
        "_status_check",
        "node",
    )

    def __init__(self, node: Node) -> None:
        self.node = node
        self._check = compile_checks(node)
        self._list_check = compile_list_checks(node)
        self._embedded_check = compile_embedded_checks(node)
        self._cel = compile_cel_checks(node)
        self._default = compile_defaulter(node)
        self._prune = compile_pruner(node, root=True)
        status = node.properties.get("status")
        self._status_check = (
            compile_checks(status, prefixed_field_namer("status")) if status is not None else None
        )

    @classmethod
    def compile(
        cls, openapi_v3_schema: dict[str, Any], *, path: str = "openAPIV3Schema"
    ) -> StructuralSchema:
        """Compile a CRD version's ``openAPIV3Schema``; do it once per CRD version.

        ``path`` prefixes the schema paths in error messages (the server may pass
        ``spec.versions[0].schema.openAPIV3Schema``). Raises :class:`SchemaError` when the schema
        is not structural, a pattern is not RE2, a CEL rule does not compile, or a default does not
        validate against its own schema.
        """
        schema = cls(parse(openapi_v3_schema, path))
        schema._check_defaults(schema.node)
        return schema

    def default(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` with the schema's defaults applied and non-nullable nulls dropped; pure: a
        new object that shares what did not change with ``obj``, or ``obj`` itself."""
        result = self._default(obj)
        return result if isinstance(result, dict) else obj

    def prune(self, obj: dict[str, Any], *, unknown: list[str] | None = None) -> dict[str, Any]:
        """A new object without the fields the schema does not name; ``obj`` is not changed, but
        shares with the result the subtrees kept whole (``metadata``, preserved unknown fields).

        ``apiVersion``, ``kind`` and ``metadata`` are kept at the root. When ``unknown`` is a list,
        the paths of the removed fields are appended to it, sorted (for ``unknown field "<path>"``
        warnings and ``fieldValidation=Strict``).
        """
        found: list[str] | None = [] if unknown is not None else None
        result = self._prune(obj, found, "")
        if unknown is not None and found:
            unknown.extend(sorted(found))
        return result if isinstance(result, dict) else obj

    def validate(
        self, obj: dict[str, Any], old: dict[str, Any] | None, *, subresource: str = ""
    ) -> list[FieldCause]:
        """The reasons ``obj`` is invalid (empty when valid); pure, never raises on bad data.

        ``old`` is the stored object on update (``None`` on create): it enables transition rules
        and ratcheting. Order: OpenAPI causes (depth first, properties in schema order), then
        embedded resources' type meta, then list-type duplicates, then CEL rules, which are
        skipped with the "some validation rules were not checked" cause when a type, required,
        enum or size error exists, as kube-apiserver does.

        ``subresource="status"`` validates a status update as kube-apiserver does: the OpenAPI
        pass covers only ``status`` (messages relative to it, fields under ``status.``), the
        list-type and CEL passes the whole object.
        """
        out: list[FieldCause] = []
        old_value = NO_OLD if old is None else old
        if subresource == "status":
            if self._status_check is not None and isinstance(obj, dict) and "status" in obj:
                old_status = old.get("status", NO_OLD) if isinstance(old, dict) else NO_OLD
                self._status_check(obj["status"], old_status, "", out)
        else:
            self._check(obj, old_value, "", out)
            if self._embedded_check is not None:
                self._embedded_check(obj, "", out)
        if self._list_check is not None:
            old_list_errors: list[FieldCause] = []
            if old is not None:
                self._list_check(old, "", old_list_errors)
            if not old_list_errors:
                self._list_check(obj, "", out)
        if self._cel is not None:
            if any(c.reason in schema_messages.BLOCKING_REASONS for c in out):
                out.append(schema_messages.RULES_NOT_CHECKED)
            else:
                self._cel(_cel_root(obj), NO_OLD if old is None else _cel_root(old), "", out)
        return out

    def _check_defaults(self, node: Node) -> None:
        """Every ``default`` must itself be valid (after pruning) for its field, as kube checks."""
        if node.has_default and node.default is not None:
            causes: list[FieldCause] = []
            compile_checks(node)(node.default, NO_OLD, "", causes)
            if causes:
                raise SchemaError(f"{node.path}.default: {causes[0].message}")
        for child in (*node.properties.values(), node.items, node.additional):
            if child is not None:
                self._check_defaults(child)


def _cel_root(obj: Any) -> Any:
    """``self`` at the resource root: kube exposes only metadata.name and generateName."""
    if not isinstance(obj, Mapping) or "metadata" not in obj:
        return obj
    meta = obj.get("metadata")
    trimmed = {
        k: meta[k] for k in ("name", "generateName") if isinstance(meta, Mapping) and k in meta
    }
    return {**obj, "metadata": trimmed}
