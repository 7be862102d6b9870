"""CustomResourceDefinitions: validating them, serving what they define, and tearing down.

* :func:`validate_crd` (called by :mod:`.admission`) checks names, group, scope, versions
  (exactly one storage version) and compiles every version's schema (a schema that does not
  compile is a 422 on the CRD).
* :class:`CrdController` listens to CRD commits in the store: a CRD that is stored starts
  being served at once (its versions in the :class:`.registry.Registry`, their compiled
  schemas in ``state.schemas``); a CRD being deleted has its objects deleted, then its
  ``customresourcecleanup`` finalizer removed; a CRD that is gone stops being served and its
  watches end.
"""

from __future__ import annotations

import re
from typing import Any

from . import status
from .registry import ALL_VERBS, ResourceType
from .schema import SchemaError
from .state import ApiState, PassThroughSchema, Schema
from .store import Event
from .validation import label_errors, subdomain_errors

CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def _version_key(name: str) -> tuple[int, int, int, str]:
    """Kubernetes version priority: GA > beta > alpha > others, higher numbers first."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", name)
    if not m:
        return (3, 0, 0, name)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, name)


def compile_schema(state: ApiState, version: dict[str, Any], index: int = 0) -> Schema:
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return PassThroughSchema()
    return state.compile_schema(schema, path=f"spec.versions[{index}].schema.openAPIV3Schema")


def _schema_cause(message: str) -> status.FieldCause:
    """A compile error ``path: Reason: detail`` as a field cause."""
    field, sep, detail = message.partition(": ")
    if not sep or " " in field:
        return status.FieldCause("FieldValueInvalid", "", message)
    return status.FieldCause("FieldValueInvalid", field, detail)


def validate_crd(
    state: ApiState, obj: dict[str, Any], old: dict[str, Any] | None
) -> list[status.FieldCause]:
    """Field causes for a CustomResourceDefinition that is not acceptable; pure apart from
    compiling schemas."""
    causes: list[status.FieldCause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [status.required("spec")]
    group = spec.get("group")
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    assert isinstance(names, dict)
    plural = names.get("plural")
    if not isinstance(group, str) or not group:
        causes.append(status.required("spec.group"))
    elif subdomain_errors(group) or "." not in group:
        causes.append(
            status.invalid_value("spec.group", group, "should be a domain with at least one dot")
        )
    if not isinstance(plural, str) or not plural:
        causes.append(status.required("spec.names.plural"))
    else:
        for err in label_errors(plural):
            causes.append(status.invalid_value("spec.names.plural", plural, err))
    kind = names.get("kind")
    if not isinstance(kind, str) or not kind:
        causes.append(status.required("spec.names.kind"))
    elif not _KIND.match(kind):
        causes.append(
            status.invalid_value(
                "spec.names.kind",
                kind,
                "may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?",
            )
        )
    name = (obj.get("metadata") or {}).get("name")
    if isinstance(group, str) and isinstance(plural, str) and name != f"{plural}.{group}":
        causes.append(
            status.invalid_value("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
        )
    scope = spec.get("scope")
    if scope not in ("Cluster", "Namespaced"):
        causes.append(status.not_supported("spec.scope", scope, ("Cluster", "Namespaced")))
    causes += _versions(state, spec.get("versions"))
    if old is not None:
        old_spec = old.get("spec") or {}
        if old_spec.get("scope") != scope:
            causes.append(status.invalid_value("spec.scope", scope, "field is immutable"))
    if not causes and old is None:
        rt = state.registry.get(group, _storage_version(spec) or "", plural)  # type: ignore[arg-type]
        if rt is not None and not rt.custom:
            causes.append(status.invalid_value("metadata.name", name, "is a built-in resource"))
    return causes


def _versions(state: ApiState, versions: Any) -> list[status.FieldCause]:
    if not isinstance(versions, list) or not versions:
        return [status.required("spec.versions")]
    causes: list[status.FieldCause] = []
    storage = 0
    seen: set[str] = set()
    for i, v in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(v, dict):
            causes.append(status.type_invalid(path, v, "object"))
            continue
        vname = v.get("name")
        if not isinstance(vname, str) or not vname:
            causes.append(status.required(f"{path}.name"))
        else:
            for err in label_errors(vname):
                causes.append(status.invalid_value(f"{path}.name", vname, err))
            if vname in seen:
                causes.append(status.duplicate(f"{path}.name", vname))
            seen.add(vname)
        if v.get("storage") is True:
            storage += 1
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            causes.append(status.required(f"{path}.schema.openAPIV3Schema"))
            continue
        try:
            state.compile_schema(schema, path=f"{path}.schema.openAPIV3Schema")
        except SchemaError as exc:
            causes.append(_schema_cause(str(exc)))
    if storage != 1:
        causes.append(
            status.invalid_value(
                "spec.versions", versions, "must have exactly one version marked as storage version"
            )
        )
    return causes


def _storage_version(spec: dict[str, Any]) -> str | None:
    for v in spec.get("versions") or ():
        if isinstance(v, dict) and v.get("storage") is True:
            return str(v.get("name"))
    return None


def resource_types(spec: dict[str, Any]) -> list[ResourceType]:
    """The served versions of a (valid) CRD spec, preferred version first."""
    names = spec["names"]
    storage = _storage_version(spec) or ""
    subresources: tuple[str, ...] = ()
    out = []
    versions = sorted(
        (v for v in spec["versions"] if v.get("served", True)),
        key=lambda v: _version_key(str(v["name"])),
    )
    for v in versions:
        subs = v.get("subresources") or {}
        subresources = tuple(s for s in ("status", "scale") if s in subs)
        columns = tuple(
            (
                str(c.get("name", "")),
                str(c.get("type", "string")),
                str(c.get("jsonPath", "")),
                int(c.get("priority", 0) or 0),
            )
            for c in v.get("additionalPrinterColumns") or ()
            if isinstance(c, dict)
        )
        out.append(
            ResourceType(
                spec["group"],
                str(v["name"]),
                names["plural"],
                names["kind"],
                spec["scope"] == "Namespaced",
                tuple(names.get("shortNames") or ()),
                tuple(names.get("categories") or ()),
                subresources,
                ALL_VERBS,
                selectable_fields=tuple(
                    str(f.get("jsonPath", "")).lstrip(".")
                    for f in v.get("selectableFields") or ()
                    if isinstance(f, dict)
                ),
                generation=True,
                custom=True,
                storage_version=storage,
                printer_columns=columns,
            )
        )
    return out


def accepted_status(spec: dict[str, Any], now: str) -> dict[str, Any]:
    """The status the establishing controllers would write right away."""
    names = dict(spec.get("names") or {})
    conditions = [
        {
            "type": t,
            "status": "True",
            "lastTransitionTime": now,
            "reason": r,
            "message": m,
        }
        for t, r, m in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        )
    ]
    return {
        "conditions": conditions,
        "acceptedNames": names,
        "storedVersions": [_storage_version(spec) or ""],
    }


def prepare_crd(obj: dict[str, Any], *, create: bool, now: str) -> None:
    """On create: the cleanup finalizer and an Established status (in place)."""
    if not create:
        return
    meta = obj.setdefault("metadata", {})
    finalizers = meta.setdefault("finalizers", [])
    if isinstance(finalizers, list) and CLEANUP_FINALIZER not in finalizers:
        finalizers.append(CLEANUP_FINALIZER)
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("names"), dict):
        obj["status"] = accepted_status(spec, now)


class CrdController:
    """Keeps the registry and schemas in step with stored CRDs (a store listener)."""

    def __init__(self, state: ApiState) -> None:
        self.state = state
        self.terminating: set[str] = set()  # CRD names whose objects are being cleaned up
        self._schemas_of: dict[tuple[str, str, str], Any] = {}  # the raw schema served

    def on_event(self, ev: Event) -> None:
        if ev.skey != CRD_KEY:
            return
        if ev.type == "DELETED":
            self._unserve(ev.new.decode())
            return
        crd = ev.new.decode()
        self.serve(crd)
        if (crd.get("metadata") or {}).get("deletionTimestamp"):
            self.terminating.add(ev.new.key)

    def serve(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        try:
            types = resource_types(spec)
        except (KeyError, TypeError, AttributeError):
            return
        group, plural = spec["group"], spec["names"]["plural"]
        self.state.store.start_history((group, plural))
        before = {
            rt.version: self._schemas_of.get((group, rt.version, plural))
            for rt in self.state.registry.versions((group, plural))
        }
        self.state.registry.remove(group, plural)
        for key in [k for k in self.state.schemas if k[0] == group and k[2] == plural]:
            del self.state.schemas[key]
        versions = {str(v.get("name")): (i, v) for i, v in enumerate(spec.get("versions") or ())}
        for rt in types:
            self.state.registry.add(rt)
            index, version = versions[rt.version]
            try:
                schema = compile_schema(self.state, version, index)
            except SchemaError:  # stored by an older server that accepted it: serve unchecked
                schema = PassThroughSchema()
            self.state.schemas[(group, rt.version, plural)] = schema
            raw = (version.get("schema") or {}).get("openAPIV3Schema")
            key = (group, rt.version, plural)
            if before.get(rt.version) not in (None, raw) and self.state.store.count(
                (group, plural)
            ):
                self.state.default_on_read.add(key)
            self._schemas_of[key] = raw

    def _unserve(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        group = spec.get("group", "")
        plural = (spec.get("names") or {}).get("plural", "")
        self.state.registry.remove(group, plural)
        for key in [k for k in self.state.schemas if k[0] == group and k[2] == plural]:
            del self.state.schemas[key]
            self.state.default_on_read.discard(key)
            self._schemas_of.pop(key, None)
        self.state.hub.close_all((group, plural))
        self.state.store.drop((group, plural))
        self.terminating.discard(crd["metadata"]["name"])
