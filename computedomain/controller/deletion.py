"""Teardown plans: a domain being deleted, and the remains of a domain that is gone.

Upstream's order (docs/compatibility.md#deletion-and-orphan-cleanup): delete the workload template,
the daemon template and the DaemonSet; strip the domain's node labels (so no new daemon is
scheduled; workloads are not waited for; here as soon as the cache shows a label, and always on the
last pass, from a live list); remove each object's finalizer once it is terminating; only when all
of them have left the cache, remove the domain's finalizer. Every step is idempotent and the plan is
recomputed from the cache on every pass, so a restart in the middle resumes where it stopped.

Fixed here (docs/compatibility.md#deletion-never-sticks): the daemon template is deleted even
when the DaemonSet is already gone; an object a user deleted by hand is simply finished; a
finalizer is removed in the same pass as the delete that made the object terminate (apply reads
the delete's response), so the usual teardown takes one pass of writes and one pass to confirm.
The second pass is queued by the deletion events of the objects (the informers), not by a retry
timer. When the domain has been terminating longer than cache lag explains (someone else's
finalizer, say), a Normal event names what is still there.

The same teardown, without a domain finalizer, cleans up after a domain that is absent from a
synced cache (orphans). Pure; called by :mod:`~computedomain.controller.planning`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from computedomain.api import names
from computedomain.api.models import ComputeDomain
from computedomain.controller import objects
from computedomain.controller.actions import (
    Action,
    ConfirmGone,
    Delete,
    Emit,
    ForgetDomain,
    Kind,
    Ref,
    RemoveFinalizer,
    RemoveNodeLabels,
    Wait,
)
from computedomain.controller.objects import JsonObject
from computedomain.controller.snapshot import Snapshot

# Seconds a domain may be terminating with objects left before the wait is reported as an
# event (until then it is the server and the caches catching up).
REPORT_WAIT_AFTER: Final = 5.0


def ref_of(obj: JsonObject, is_daemon_set: bool) -> Ref:
    """The action reference of a cached DaemonSet or ResourceClaimTemplate. Pure."""
    kind = Kind.DAEMON_SET if is_daemon_set else Kind.RESOURCE_CLAIM_TEMPLATE
    return Ref(kind, objects.namespace(obj), objects.name(obj), objects.uid(obj))


def describe(owned: tuple[tuple[JsonObject, bool], ...]) -> str:
    """``DaemonSet ns/a, ResourceClaimTemplate ns/b`` with foreign finalizers named. Pure."""
    parts = []
    for obj, is_ds in owned:
        text = str(ref_of(obj, is_ds))
        others = [f for f in objects.finalizers(obj) if f != names.FINALIZER]
        if others:
            text += f" (finalizers: {', '.join(others)})"
        parts.append(text)
    return ", ".join(parts)


def teardown(snapshot: Snapshot, *, last_pass: bool) -> tuple[list[Action], bool]:
    """Delete, unlabel, unfinalize everything labelled with the UID. Pure.

    ``last_pass``: no later pass will come back for the nodes (an orphan's teardown). Returns
    the actions and whether this pass issues deletes.
    """
    owned = snapshot.owned
    deletes: list[Action] = [
        Delete(ref_of(o, is_ds)) for o, is_ds in owned if not objects.terminating(o)
    ]
    actions: list[Action] = list(deletes)
    # A live LIST of nodes whenever the cache shows labels, and on the last pass (the cache
    # may lag, or a kubelet plugin may have labelled a node while the teardown ran).
    # Host-managed IMEX labels no node (upstream then runs no node-label cleanup either).
    if not snapshot.host_managed and (last_pass or snapshot.labelled_nodes or not owned):
        actions.append(RemoveNodeLabels(snapshot.uid))
    actions.extend(
        RemoveFinalizer(ref_of(o, is_ds)) for o, is_ds in owned if objects.has_finalizer(o)
    )
    return actions, bool(deletes)


def terminating_for(domain: ComputeDomain, now: datetime) -> float:
    """Seconds since the domain's deletionTimestamp (0 when absent or unreadable). Pure."""
    stamp = domain.metadata.deletion_timestamp
    try:
        since = datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        return 0.0
    if since is None or since.tzinfo is None:
        return 0.0
    return max(0.0, (now - since).total_seconds())


def plan_deletion(snapshot: Snapshot, domain: ComputeDomain) -> tuple[Action, ...]:
    """The deletion pass of a domain with a deletionTimestamp (upstream's order, fixed). Pure."""
    actions, deleting = teardown(snapshot, last_pass=False)
    owned = snapshot.owned
    if deleting:
        actions.append(Emit("Normal", "Deleting", f"deleting {describe(owned)}"))
    if owned:
        message = f"waiting for {describe(owned)} to be removed"
        if terminating_for(domain, snapshot.now) >= REPORT_WAIT_AFTER:
            actions.append(Emit("Normal", "DeletionWaiting", message))
        actions.append(Wait(message))
        return tuple(actions)
    meta = domain.metadata
    if names.FINALIZER in meta.finalizers:
        actions.append(
            RemoveFinalizer(Ref(Kind.COMPUTE_DOMAIN, meta.namespace, meta.name, meta.uid))
        )
    actions.append(ForgetDomain(snapshot.uid))
    return tuple(actions)


def plan_orphans(snapshot: Snapshot) -> tuple[Action, ...]:
    """Clean up after a UID with no domain in the synced cache. Pure.

    When there is something to tear down and no live read has confirmed the domain gone yet,
    the plan is that read (:class:`ConfirmGone`). Cliques and daemon pods are left to garbage
    collection, as upstream leaves them.
    """
    if not snapshot.owned and not snapshot.labelled_nodes:
        return (ForgetDomain(snapshot.uid),)  # nothing left: no API call for a UID simply gone
    if not snapshot.confirmed_gone:
        return (ConfirmGone(snapshot.uid),)
    actions, _ = teardown(snapshot, last_pass=True)
    actions.append(ForgetDomain(snapshot.uid))
    return tuple(actions)
