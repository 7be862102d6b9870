"""DELETE semantics: preconditions, graceful deletion, finalizers and propagation policies.

Called by :mod:`.rest` for DELETE and deletecollection, and by :mod:`.gc` (owner garbage
collection, namespace deletion). Synchronous (see :mod:`.writes` on why); raises
:class:`.status.ApiStatusError`.

* An object with finalizers (or deleted with ``Foreground``/``Orphan`` propagation, which add
  the ``foregroundDeletion``/``orphan`` finalizers) gets ``deletionTimestamp`` and
  ``deletionGracePeriodSeconds: 0`` and stays until its finalizers are gone.
* A pod that is bound to a node and not terminal is deleted gracefully: it keeps
  ``deletionTimestamp = now + grace`` until the kubelet deletes it with a zero grace period.
* A namespace goes ``Terminating``; :mod:`.gc` empties it, then removes it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import attrs

from . import objects, status, writes
from .registry import ResourceType
from .state import ApiState
from .store import Entry

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
POLICIES = ("Orphan", "Background", "Foreground")
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


@attrs.frozen
class DeleteOptions:
    grace_period: int | None = None
    propagation: str | None = None
    orphan_dependents: bool | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: tuple[str, ...] = ()  # the body's dryRun (kubectl sends it there, not in the query)

    @classmethod
    def from_json(cls, body: Any, query: Any) -> DeleteOptions:
        """From a DeleteOptions body and/or query parameters; raises 400 on bad values."""
        body = body if isinstance(body, dict) else {}
        pre = body.get("preconditions") or {}
        if not isinstance(pre, dict):
            raise status.bad_request("preconditions must be an object")

        def pick(name: str) -> Any:
            return body.get(name) if body.get(name) is not None else query.get(name)

        grace = pick("gracePeriodSeconds")
        if grace is not None:
            try:
                grace = int(grace)
            except (TypeError, ValueError):
                raise status.bad_request(f"invalid gracePeriodSeconds: {grace!r}") from None
        policy = pick("propagationPolicy")
        if policy is not None and policy not in POLICIES:
            raise status.invalid(
                "DeleteOptions",
                "",
                "",
                [status.not_supported("propagationPolicy", policy, POLICIES)],
            )
        orphan = pick("orphanDependents")
        if isinstance(orphan, str):
            orphan = orphan.lower() == "true"
        if orphan is not None and policy is not None:
            raise status.invalid(
                "DeleteOptions",
                "",
                "",
                [
                    status.invalid_value(
                        "propagationPolicy",
                        policy,
                        "orphanDependents and deletionPropagation cannot be both set",
                    )
                ],
            )
        dry = body.get("dryRun") or ()
        dry = [dry] if isinstance(dry, str) else dry
        if not isinstance(dry, list | tuple) or not all(isinstance(v, str) for v in dry):
            raise status.bad_request(f"dryRun must be a list of strings, not {dry!r}")
        uid, version = pre.get("uid"), pre.get("resourceVersion")
        return cls(grace, policy, orphan, uid, version, tuple(dry))


@attrs.frozen
class DeleteResult:
    entry: Entry
    deleted: bool  # gone now (False: pending finalizers or graceful termination)


def _policy(opts: DeleteOptions) -> str:
    if opts.propagation:
        return opts.propagation
    if opts.orphan_dependents is not None:
        return "Orphan" if opts.orphan_dependents else "Background"
    return "Background"


def _grace(rt: ResourceType, obj: dict[str, Any], opts: DeleteOptions) -> int:
    if not (rt.group == "" and rt.kind == "Pod"):
        return 0
    spec = obj.get("spec") or {}
    phase = (obj.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    if opts.grace_period is not None:
        return max(0, opts.grace_period)
    default = spec.get("terminationGracePeriodSeconds")
    return int(default) if isinstance(default, int) and default >= 0 else 30


def _check_preconditions(rt: ResourceType, entry: Entry, opts: DeleteOptions) -> None:
    """kube-apiserver's 409 for a failed precondition, naming the object by kind."""
    what, have = "", ""
    if opts.uid and opts.uid != entry.uid:
        what, have, want = "UID", entry.uid, opts.uid
        why = "The object might have been deleted and then recreated"
    elif opts.resource_version and opts.resource_version != str(entry.rv):
        what, have, want = "ResourceVersion", str(entry.rv), opts.resource_version
        why = "The object might have been modified"
    if what:
        raise status.conflict(
            rt.kind,
            rt.group,
            entry.name,
            f"the {what} in the precondition ({want}) does not match the {what} in record "
            f"({have}). {why}",
        )


def delete(
    state: ApiState, rt: ResourceType, namespace: str, name: str, opts: DeleteOptions
) -> DeleteResult:
    """Delete one object; idempotent for objects already being deleted (returns them)."""
    entry = writes.get_current(state, rt, namespace, name)
    _check_preconditions(rt, entry, opts)
    obj = entry.decode()
    meta = obj["metadata"]
    if rt.group == "" and rt.kind == "Namespace":
        return _delete_namespace(state, rt, entry, obj)
    policy = _policy(opts)
    finalizers = [f for f in meta.get("finalizers") or () if isinstance(f, str)]
    wanted = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    if policy == "Orphan":
        wanted.append(ORPHAN)
    elif policy == "Foreground":
        wanted.append(FOREGROUND)
    elif opts.propagation is None and opts.orphan_dependents is None:
        wanted = finalizers  # no explicit policy: keep what earlier requests asked for
    grace = _grace(rt, obj, opts)
    now = state.clock()
    if meta.get("deletionTimestamp"):
        return _redelete(state, rt, entry, obj, wanted=wanted, grace=grace, now=now)
    if not wanted and grace == 0:
        ev = writes.commit(state, rt, entry.key, None)
        return DeleteResult(ev.new, True)
    if wanted != finalizers:
        meta["finalizers"] = wanted
    meta["deletionTimestamp"] = objects.rfc3339(now + dt.timedelta(seconds=grace))
    meta["deletionGracePeriodSeconds"] = grace
    if isinstance(meta.get("generation"), int) and meta["generation"] > 0:
        meta["generation"] += 1  # kube-apiserver bumps it when deletion starts
    ev = writes.commit(state, rt, entry.key, obj)
    return DeleteResult(ev.new, False)


def _redelete(
    state: ApiState,
    rt: ResourceType,
    entry: Entry,
    obj: dict[str, Any],
    *,
    wanted: list[str],
    grace: int,
    now: dt.datetime,
) -> DeleteResult:
    """A delete of an object that is already being deleted: may shorten the grace period or
    change the propagation finalizers; otherwise returns the object unchanged."""
    meta = obj["metadata"]
    current_grace = int(meta.get("deletionGracePeriodSeconds") or 0)
    changed = False
    if wanted != list(meta.get("finalizers") or ()):
        meta["finalizers"] = wanted
        changed = True
    if grace < current_grace:
        meta["deletionGracePeriodSeconds"] = grace
        meta["deletionTimestamp"] = objects.rfc3339(now + dt.timedelta(seconds=grace))
        changed = True
    if not meta.get("finalizers") and not meta.get("deletionGracePeriodSeconds"):
        ev = writes.commit(state, rt, entry.key, None)
        return DeleteResult(ev.new, True)
    if not changed:
        return DeleteResult(entry, False)
    ev = writes.commit(state, rt, entry.key, obj)
    return DeleteResult(ev.new, False)


def _delete_namespace(
    state: ApiState, rt: ResourceType, entry: Entry, obj: dict[str, Any]
) -> DeleteResult:
    name = entry.name
    if name in IMMORTAL_NAMESPACES:
        raise status.forbidden(
            f'namespaces "{name}" is forbidden: this namespace may not be deleted',
            resource="namespaces",
            name=name,
        )
    meta = obj["metadata"]
    if meta.get("deletionTimestamp"):
        state.namespace_notify(name)
        return DeleteResult(entry, False)
    meta["deletionTimestamp"] = objects.rfc3339(state.clock())
    meta["deletionGracePeriodSeconds"] = 0
    obj.setdefault("status", {})["phase"] = "Terminating"
    ev = writes.commit(state, rt, entry.key, obj)
    state.namespace_notify(name)
    return DeleteResult(ev.new, False)


def returns_object(rt: ResourceType) -> bool:
    """Whether an immediate delete answers with the deleted object (as pods do) rather than
    a success Status."""
    return rt.group == "" and rt.kind == "Pod"


def success_status(rt: ResourceType, entry: Entry) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": entry.name,
            **({"group": rt.group} if rt.group else {}),
            "kind": rt.plural,
            "uid": entry.uid,
        },
    }
