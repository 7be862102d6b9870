"""``plan(snapshot) -> actions``: the whole reconcile decision for one ComputeDomain UID.

Three cases: the UID has no domain in the synced cache (clean up its remains), the domain is
being deleted (ordered teardown, :mod:`~.deletion`), or it lives. A living domain gets, in this
order: our finalizer; the daemon ResourceClaimTemplate and the DaemonSet in
the driver namespace unless a DaemonSet of the domain exists in any managed namespace; the
workload ResourceClaimTemplate in its own namespace; its status (:mod:`~.statusplan`); and
clique pruning (:mod:`~.pruning`). Objects are looked up by the domain label, so a just-created
object (visible through the read-your-writes cache) is never created twice. With host-managed
IMEX (docs/compatibility.md#host-managed-imex-daemons) there is no daemon template, DaemonSet or
clique, the workload template always asks for ``allocationMode: Single``, and the status is
upstream's constant ``Ready`` with a condition about the hosts' daemons (:mod:`~.hoststatus`).

What users must know becomes events and a ``Ready`` condition: objects created; a workload
template name that already belongs to someone else (a Warning, a condition, and a permanent
error instead of upstream's endless AlreadyExists retries; re-evaluated whenever the colliding
object changes); an object deleted by hand while the domain lives, which is let go and
re-created (upstream kept finding the terminating object and the domain stayed broken). See
docs/compatibility.md#deletion-never-sticks. Pure: no I/O, no clock (the snapshot carries the
time).
"""

from __future__ import annotations

import cattrs

from computedomain.api import convert, names, validation
from computedomain.api.errors import ConfigError
from computedomain.api.models import ComputeDomain
from computedomain.controller import (
    deletion,
    hoststatus,
    objects,
    pruning,
    readiness,
    rendering,
    statusplan,
)
from computedomain.controller.actions import (
    Action,
    AddFinalizer,
    Create,
    Emit,
    Fail,
    Kind,
    ReadLivePods,
    Ref,
    RemoveFinalizer,
    Wait,
)
from computedomain.controller.readiness import Problem
from computedomain.controller.snapshot import Snapshot


def plan(snapshot: Snapshot) -> tuple[Action, ...]:
    """Every action the cached state calls for, in execution order. Pure.

    ``(ReadLivePods,)`` alone means: read the daemon pods live, then plan again with them.
    """
    if snapshot.domain is None:
        return deletion.plan_orphans(snapshot)
    try:
        domain = convert.compute_domain(snapshot.domain)
    except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
        name = objects.key(snapshot.domain)
        return (Fail(f"ComputeDomain {name} cannot be read: {exc}"),)
    if domain.metadata.deleting:
        return deletion.plan_deletion(snapshot, domain)
    return plan_living(snapshot, domain)


def domain_ref(domain: ComputeDomain) -> Ref:
    meta = domain.metadata
    return Ref(Kind.COMPUTE_DOMAIN, meta.namespace, meta.name, meta.uid)


def _hand_deleted(snapshot: Snapshot) -> tuple[list[Action], list[Problem]]:
    """Owned objects someone deleted while the domain lives: let them go, re-create later."""
    actions: list[Action] = []
    problems: list[Problem] = []
    for obj, is_ds in snapshot.owned:
        if not objects.terminating(obj):
            continue
        ref = deletion.ref_of(obj, is_ds)
        if objects.has_finalizer(obj):
            actions.append(RemoveFinalizer(ref))
            actions.append(
                Emit(
                    "Warning",
                    "ObjectDeleted",
                    f"{ref} was deleted while the domain exists; it will be re-created",
                )
            )
        problems.append(Problem(readiness.REASON_RECREATING, f"{ref} is being re-created"))
    return actions, problems


def _daemon_objects(snapshot: Snapshot, domain: ComputeDomain) -> list[Create]:
    """Daemon template, then DaemonSet, in the driver namespace, where absent."""
    elsewhere = [
        ds
        for ds in snapshot.daemon_sets
        if objects.namespace(ds) != snapshot.settings.namespace and not objects.terminating(ds)
    ]
    if elsewhere:  # a DaemonSet left by an earlier install keeps serving the domain
        return []
    creates = []
    name = names.daemon_object_name(snapshot.uid)
    namespace = snapshot.settings.namespace
    if snapshot.daemon_object(snapshot.daemon_templates) is None:
        body = rendering.daemon_claim_template(domain, snapshot.settings)
        creates.append(Create(Ref(Kind.RESOURCE_CLAIM_TEMPLATE, namespace, name), body))
    if snapshot.daemon_object(snapshot.daemon_sets) is None:
        body = rendering.daemon_set(domain, snapshot.settings)
        creates.append(Create(Ref(Kind.DAEMON_SET, namespace, name), body))
    return creates


def _workload_template(
    snapshot: Snapshot, domain: ComputeDomain
) -> tuple[list[Create], list[Problem], Action | None]:
    """Create the workload template, or say why not (a problem, and a Fail or Wait)."""
    if snapshot.workload_templates:
        return [], [], None
    name = domain.spec.channel.resource_claim_template.name
    namespace = domain.metadata.namespace
    where = f"ResourceClaimTemplate {namespace}/{name}"
    try:
        validation.dns1123_subdomain("spec.channel.resourceClaimTemplate.name", name)
    except ConfigError as exc:
        text = f"cannot create the workload template: {exc}"
        return [], [Problem(readiness.REASON_INVALID, text)], Fail(text)
    other = snapshot.named_template
    if other is None:
        ref = Ref(Kind.RESOURCE_CLAIM_TEMPLATE, namespace, name)
        body = rendering.workload_claim_template(domain, single=snapshot.host_managed)
        return [Create(ref, body)], [], None
    owner = objects.domain_uid(other)
    if owner == snapshot.uid:
        return [], [], None  # ours, only missing its target label: never create it twice
    if objects.terminating(other) or (owner and not snapshot.named_template_owner_exists):
        text = f"{where} of a deleted ComputeDomain is being removed; waiting to create it"
        return [], [Problem(readiness.REASON_RECREATING, text)], Wait(text)
    whose = f"ComputeDomain with UID {owner}" if owner else "no ComputeDomain"
    text = (
        f"{where} already exists and belongs to {whose}; delete it or choose another "
        "spec.channel.resourceClaimTemplate.name"
    )
    return [], [Problem(readiness.REASON_CONFLICT, text)], Fail(text)


def plan_living(snapshot: Snapshot, domain: ComputeDomain) -> tuple[Action, ...]:
    """The plan for a domain that is not being deleted. Pure."""
    actions: list[Action] = []
    if names.FINALIZER not in domain.metadata.finalizers:
        actions.append(AddFinalizer(domain_ref(domain)))
    hand_deleted, problems = _hand_deleted(snapshot)
    actions.extend(hand_deleted)
    creates: list[Create] = [] if snapshot.host_managed else _daemon_objects(snapshot, domain)
    workload, workload_problems, verdict = _workload_template(snapshot, domain)
    creates.extend(workload)
    problems.extend(workload_problems)
    actions.extend(creates)
    if snapshot.host_managed:
        follow_up = hoststatus.plan_status(snapshot, domain, problems)
    else:
        follow_up = (
            *statusplan.plan_status(snapshot, domain, problems),
            *pruning.plan_prunes(snapshot, statusplan.parse_cliques(snapshot)),
        )
    if any(isinstance(a, ReadLivePods) for a in follow_up):
        return (ReadLivePods(snapshot.uid),)
    actions.extend(follow_up)  # the status write does not wait for the creates (apply.batches)
    if creates:
        made = ", ".join(str(c.ref) for c in creates)
        actions.append(Emit("Normal", "Created", f"created {made}"))
    if isinstance(verdict, Fail):
        actions.append(Emit("Warning", problems[-1].reason, verdict.message))
    if verdict is not None:
        actions.append(verdict)
    return tuple(actions)
