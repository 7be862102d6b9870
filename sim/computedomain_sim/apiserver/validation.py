"""ObjectMeta validation shared by every kind (names, labels, annotations, finalizers,
ownerReferences), worded as apimachinery words it.

Called by :mod:`.admission` on create and update; pure, returns field causes (an empty list
means valid).
"""

from __future__ import annotations

import re
from typing import Any

from . import status
from .selectors import label_value_errors, qualified_name_errors

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_MAX_ANNOTATIONS = 256 * 1024

# How each kind's names are checked (kube-apiserver uses path-segment names for RBAC).
NAME_RULES = {
    "Namespace": "label",
    "Role": "segment",
    "ClusterRole": "segment",
    "RoleBinding": "segment",
    "ClusterRoleBinding": "segment",
}


def subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _SUBDOMAIN.match(value):
        errs.append(SUBDOMAIN_MSG)
    return errs


def label_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL.match(value):
        errs.append(LABEL_MSG)
    return errs


def segment_errors(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    for bad in ("/", "%"):
        if bad in value:
            return [f"may not contain '{bad}'"]
    return []


def name_errors(kind: str, value: str, *, prefix: bool = False) -> list[str]:
    """Errors of an object name of ``kind`` (``prefix``: a generateName, may end in '-')."""
    rule = NAME_RULES.get(kind, "subdomain")
    if rule == "segment":
        return segment_errors(value)
    if prefix and value.endswith("-"):
        value = value[:-1] + "a"
    return label_errors(value) if rule == "label" else subdomain_errors(value)


def validate_metadata(
    kind: str, obj: dict[str, Any], *, namespaced: bool
) -> list[status.FieldCause]:
    """Causes for everything wrong in ``obj['metadata']``; pure."""
    causes: list[status.FieldCause] = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [status.required("metadata")]
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        causes.append(
            status.FieldCause(
                "FieldValueRequired",
                "metadata.name",
                "Required value: name or generateName is required",
            )
        )
    else:
        for err in name_errors(kind, name):
            causes.append(status.invalid_value("metadata.name", name, err))
    gen = meta.get("generateName")
    if isinstance(gen, str) and gen:
        for err in name_errors(kind, gen, prefix=True):
            causes.append(status.invalid_value("metadata.generateName", gen, err))
    ns = meta.get("namespace")
    if namespaced and isinstance(ns, str) and ns:
        for err in label_errors(ns):
            causes.append(status.invalid_value("metadata.namespace", ns, err))
    causes += _labels(meta.get("labels"))
    causes += _annotations(meta.get("annotations"))
    causes += _finalizers(meta.get("finalizers"))
    causes += _owners(meta.get("ownerReferences"))
    return causes


def _labels(labels: Any) -> list[status.FieldCause]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [status.type_invalid("metadata.labels", labels, "object")]
    causes = []
    for key, value in labels.items():
        for err in qualified_name_errors(key):
            causes.append(status.invalid_value("metadata.labels", key, err))
        if not isinstance(value, str):
            causes.append(status.type_invalid(f"metadata.labels.{key}", value, "string"))
            continue
        for err in label_value_errors(value):
            causes.append(status.invalid_value("metadata.labels", value, err))
    return causes


def _annotations(annotations: Any) -> list[status.FieldCause]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [status.type_invalid("metadata.annotations", annotations, "object")]
    causes = []
    total = 0
    for key, value in annotations.items():
        for err in qualified_name_errors(key.lower()):
            causes.append(status.invalid_value("metadata.annotations", key, err))
        if not isinstance(value, str):
            causes.append(status.type_invalid(f"metadata.annotations.{key}", value, "string"))
            continue
        total += len(key) + len(value)
    if total > _MAX_ANNOTATIONS:
        causes.append(
            status.FieldCause(
                "FieldValueTooLong",
                "metadata.annotations",
                f"Too long: may not be more than {_MAX_ANNOTATIONS} bytes",
            )
        )
    return causes


def _finalizers(finalizers: Any) -> list[status.FieldCause]:
    if finalizers is None:
        return []
    if not isinstance(finalizers, list):
        return [status.type_invalid("metadata.finalizers", finalizers, "array")]
    causes = []
    for i, f in enumerate(finalizers):
        if not isinstance(f, str):
            causes.append(status.type_invalid(f"metadata.finalizers[{i}]", f, "string"))
            continue
        for err in qualified_name_errors(f):
            causes.append(status.invalid_value(f"metadata.finalizers[{i}]", f, err))
    return causes


def _owners(refs: Any) -> list[status.FieldCause]:
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [status.type_invalid("metadata.ownerReferences", refs, "array")]
    causes = []
    controllers = []
    for i, ref in enumerate(refs):
        path = f"metadata.ownerReferences[{i}]"
        if not isinstance(ref, dict):
            causes.append(status.type_invalid(path, ref, "object"))
            continue
        for field in ("apiVersion", "kind", "name", "uid"):
            value = ref.get(field)
            if not isinstance(value, str) or not value:
                causes.append(status.required(f"{path}.{field}"))
        if ref.get("controller") is True:
            controllers.append(str(ref.get("name", "")))
    if len(controllers) > 1:
        causes.append(
            status.invalid_value(
                "metadata.ownerReferences",
                refs,
                'Only one reference can have Controller set to true. Found "true" in '
                f"references for {' and '.join(controllers)}",
            )
        )
    return causes


def validate_metadata_update(new: dict[str, Any], old: dict[str, Any]) -> list[status.FieldCause]:
    """Update-only rules: immutable fields, no new finalizers while deleting; pure."""
    causes: list[status.FieldCause] = []
    nm, om = new.get("metadata", {}), old.get("metadata", {})
    if om.get("deletionTimestamp"):
        added = set(nm.get("finalizers") or ()) - set(om.get("finalizers") or ())
        if added:
            causes.append(
                status.forbidden_field(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {_go_list(sorted(added))}",
                )
            )
    return causes


def _go_list(values: list[str]) -> str:
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"
