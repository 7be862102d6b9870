"""Admission: the mutating and validating steps every write passes before storage.

Order (as kube-apiserver): built-in defaults → CRD schema defaulting → pruning of unknown
fields → metadata validation → kind validation (CRD schema incl. CEL rules, CRD objects
themselves) → 422 ``Invalid`` if anything failed. Called by :mod:`.writes` inside the
synchronous part of a write; pure apart from reading ``state``; raises
:class:`.status.ApiStatusError`.
"""

from __future__ import annotations

from typing import Any

from . import crds, defaults, kindvalidation, objects, omitempty, protobuf, services, status
from .registry import ResourceType
from .state import ApiState
from .validation import validate_metadata, validate_metadata_update


def mutate(
    state: ApiState,
    rt: ResourceType,
    obj: dict[str, Any],
    *,
    create: bool,
    old: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Defaulted and pruned object, and the paths of unknown fields that were dropped."""
    defaults.apply_defaults(rt.group, rt.kind, obj, create=create)
    omitempty.drop_zero_values(rt.group, rt.kind, obj, builtin=not rt.custom)
    if _is_service(rt):
        services.defaults(obj)
    if rt.group == "apiextensions.k8s.io" and rt.kind == "CustomResourceDefinition":
        crds.prepare_crd(obj, create=create, now=objects.rfc3339(state.clock()))
    if not rt.custom:
        if rt.group == "apiextensions.k8s.io":  # JSONSchemaProps' JSON names are not its proto's
            return obj, []
        return obj, protobuf.prune_unknown(rt.group_version, rt.kind, obj)
    schema = state.schemas.get((rt.group, rt.version, rt.plural))
    if schema is None:
        return obj, []
    unknown: list[str] = []
    pruned = schema.prune(obj, unknown=unknown)
    return schema.default(pruned), unknown


def prepare(
    state: ApiState, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
) -> None:
    """What kube-apiserver's registry sets after the field manager has recorded the request
    (so no client owns it): a Service's IP families, cluster IP and node ports, a DaemonSet's
    template generation."""
    if _is_service(rt):
        services.allocate(state, obj, old)
    elif not rt.custom and rt.group == "apps" and rt.kind == "DaemonSet":
        defaults.daemonset_template_generation(obj, old)


def _is_service(rt: ResourceType) -> bool:
    return not rt.custom and rt.group == "" and rt.kind == "Service"


def validate(
    state: ApiState,
    rt: ResourceType,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    *,
    status_only: bool = False,
) -> None:
    """Raise 422 Invalid when ``obj`` (replacing ``old``, if given) is not acceptable."""
    causes: list[status.FieldCause] = []
    if not status_only:
        causes += validate_metadata(rt.kind, obj, namespaced=rt.namespaced)
    if old is not None:
        causes += validate_metadata_update(obj, old)
    if not rt.custom and not status_only:
        causes += kindvalidation.validate(rt.group, rt.kind, obj, old)
    if _is_service(rt) and not status_only:
        causes += services.validate(state, obj, old)
    if rt.custom:
        schema = state.schemas.get((rt.group, rt.version, rt.plural))
        if schema is not None:
            causes += schema.validate(obj, old, subresource="status" if status_only else "")
    elif rt.kind == "CustomResourceDefinition" and rt.group == "apiextensions.k8s.io":
        causes += crds.validate_crd(state, obj, old)
    if causes:
        name = str((obj.get("metadata") or {}).get("name", ""))
        raise status.invalid(rt.kind, rt.group, name, causes)


def strict_error(rt: ResourceType, unknown: list[str]) -> status.ApiStatusError:
    """400 for ``fieldValidation=Strict`` with unknown fields, worded as kube-apiserver."""
    fields = ", ".join(f'unknown field "{p}"' for p in unknown)
    return status.bad_request(
        f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
        f"strict decoding error: {fields}"
    )
