"""Membership of a clique: pure planning of the one change a daemon makes to its own entry.

Both shapes upstream keeps twin managers for (``ComputeDomainClique.daemons`` and
``ComputeDomain.status.nodes``) are normalised to a tuple of
:class:`~computedomain.api.models.DaemonInfo`; :func:`plan` takes that tuple and one operation
on the daemon's *own* entry and returns the new tuple, or None when nothing needs writing. It
never touches another daemon's entry, so a write built from it can only be wrong if it is
applied to a stale list, which :mod:`computedomain.daemon.registration` prevents with a
compare-and-swap on the object's resourceVersion. Called by the registration apply loop and by
the property suites; calls only the index policy.

Rules (docs/compatibility.md#membership):

- The identity of an entry is the node name. The additive ``podUID`` says which pod wrote it.
- :class:`Register` inserts the entry with ``NotReady`` and an index from the index policy, or
  updates the IP (and pod UID) of an existing entry in place. The index of an existing entry
  never changes; a replaced pod (new pod UID) starts ``NotReady``.
- :class:`SetStatus` changes only the status; a missing entry is a retryable error (not a no-op,
  so no readiness transition is lost).
- :class:`Deregister` removes the entry of this node written by this pod (node name + pod UID);
  only entries without a pod UID (written by upstream's daemons) are matched by IP instead.
- A write that would not change the list is not planned (invariant S7,
  docs/compatibility.md#membership-invariants).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import attrs

from computedomain.api.errors import PermanentError, TemporaryError
from computedomain.api.models import DaemonInfo, Status
from computedomain.policies.hookspecs import IndexPolicy, IndexRequest


class IndexSpaceFull(TemporaryError):
    """No free index below the limit: wait until an entry of the clique goes away."""


class NotListed(TemporaryError):
    """The own entry is not (yet) in the list, so its status cannot be set."""


class Superseded(PermanentError):
    """The node's entry now belongs to another pod (a replacement of ours): stop writing it."""


class PolicyViolation(PermanentError):
    """The index policy returned an index that is taken or out of range."""


@attrs.frozen
class Register:
    """Insert the own entry, or bring its IP and pod UID up to date (index kept).

    ``takeover``: whether an entry of this node written by *another* pod may be taken over.
    A starting daemon takes over (it replaces a gone pod); once registered, a daemon that sees
    its entry carrying another pod's UID has been replaced and must not fight back (hazard H7,
    docs/compatibility.md#upstream-hazards).
    """

    node_name: str
    ip_address: str
    clique_id: str
    pod_uid: str | None = None
    previous_index: int | None = None
    takeover: bool = True


@attrs.frozen
class SetStatus:
    """Set the own entry's status (Ready follows the own pod's Ready condition)."""

    node_name: str
    status: Status
    pod_uid: str | None = None


@attrs.frozen
class Deregister:
    """Remove the own entry (graceful shutdown)."""

    node_name: str
    ip_address: str
    pod_uid: str | None = None


Op = Register | SetStatus | Deregister


class Change(enum.StrEnum):
    INSERTED = "inserted"
    UPDATED = "updated"
    STATUS_SET = "status-set"
    REMOVED = "removed"


@attrs.frozen
class Planned:
    """The list to write, what changed, and the own entry after the change (None if removed)."""

    entries: tuple[DaemonInfo, ...]
    change: Change
    entry: DaemonInfo | None


@attrs.frozen
class Scope:
    """Which entries share the index space: all of the object's (a clique object holds one
    clique), or only those of one clique ID (``status.nodes`` mixes cliques)."""

    limit: int
    clique_id: str | None = None

    def counts(self, entry: DaemonInfo) -> bool:
        return self.clique_id is None or entry.clique_id == self.clique_id

    def describe(self) -> str:
        suffix = f" for cliqueID {self.clique_id}" if self.clique_id is not None else ""
        return f"maxNodesPerIMEXDomain ({self.limit}){suffix}"


def find(entries: Sequence[DaemonInfo], node_name: str) -> int | None:
    """Position of the entry of ``node_name``, or None. Pure."""
    return next((i for i, e in enumerate(entries) if e.node_name == node_name), None)


def _owned_by_other(entry: DaemonInfo, pod_uid: str | None) -> bool:
    return pod_uid is not None and entry.pod_uid is not None and entry.pod_uid != pod_uid


def allocate(
    entries: Sequence[DaemonInfo], op: Register, *, policy: IndexPolicy, scope: Scope
) -> int:
    """Ask ``policy`` for the new entry's index and check the answer. Pure.

    Raises IndexSpaceFull when the policy finds none, PolicyViolation when its answer is taken
    or out of range (the broken-policy guard: uniqueness never rests on a plugin alone).
    """
    used = {
        e.index: e.node_name for e in entries if scope.counts(e) and e.node_name != op.node_name
    }
    request = IndexRequest(
        node_name=op.node_name, used=used, limit=scope.limit, previous=op.previous_index
    )
    index = policy.allocate(request)
    if index is None:
        msg = f"no available indices within {scope.describe()}"
        raise IndexSpaceFull(msg)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < scope.limit:
        msg = f"index policy {policy.name!r} returned {index!r}, outside [0, {scope.limit})"
        raise PolicyViolation(msg)
    if index in used:
        msg = f"index policy {policy.name!r} returned {index}, already held by {used[index]}"
        raise PolicyViolation(msg)
    return index


def plan(
    entries: Sequence[DaemonInfo], op: Op, *, policy: IndexPolicy, scope: Scope
) -> Planned | None:
    """The list after applying ``op`` to ``entries``, or None when nothing would change.

    Pure and deterministic for a pure policy. Raises IndexSpaceFull and NotListed (retry
    later), Superseded and PolicyViolation (permanent).
    """
    entries = tuple(entries)
    pos = find(entries, op.node_name)
    if isinstance(op, Register):
        return _plan_register(entries, pos, op, policy=policy, scope=scope)
    if isinstance(op, SetStatus):
        return _plan_status(entries, pos, op)
    return _plan_remove(entries, pos, op)


def _replace(
    entries: tuple[DaemonInfo, ...], pos: int, entry: DaemonInfo
) -> tuple[DaemonInfo, ...]:
    return (*entries[:pos], entry, *entries[pos + 1 :])


def _new_entry(
    entries: tuple[DaemonInfo, ...], op: Register, *, policy: IndexPolicy, scope: Scope
) -> DaemonInfo:
    return DaemonInfo(
        node_name=op.node_name,
        ip_address=op.ip_address,
        clique_id=op.clique_id,
        index=allocate(entries, op, policy=policy, scope=scope),
        status=Status.NOT_READY,
        pod_uid=op.pod_uid,
    )


def _plan_register(
    entries: tuple[DaemonInfo, ...],
    pos: int | None,
    op: Register,
    *,
    policy: IndexPolicy,
    scope: Scope,
) -> Planned | None:
    if pos is None:
        entry = _new_entry(entries, op, policy=policy, scope=scope)
        return Planned((*entries, entry), Change.INSERTED, entry)
    current = entries[pos]
    if _owned_by_other(current, op.pod_uid) and not op.takeover:
        msg = (
            f"the entry of node {op.node_name} now belongs to pod {current.pod_uid} "
            f"(this is pod {op.pod_uid}): this daemon has been replaced"
        )
        raise Superseded(msg)
    if current.clique_id != op.clique_id:
        # The node moved to another clique (status mode; upstream never refreshes it, H9):
        # its old index means nothing there, so it joins the new clique afresh.
        entry = _new_entry(entries, op, policy=policy, scope=scope)
        return Planned(_replace(entries, pos, entry), Change.INSERTED, entry)
    pod_uid = op.pod_uid if op.pod_uid is not None else current.pod_uid
    if current.ip_address == op.ip_address and current.pod_uid == pod_uid:
        return None
    # A new pod of the node starts NotReady: its nvidia-imex has not proved itself yet.
    status = current.status if current.pod_uid == pod_uid else Status.NOT_READY
    entry = attrs.evolve(current, ip_address=op.ip_address, pod_uid=pod_uid, status=status)
    return Planned(_replace(entries, pos, entry), Change.UPDATED, entry)


def _plan_status(entries: tuple[DaemonInfo, ...], pos: int | None, op: SetStatus) -> Planned | None:
    if pos is None or _owned_by_other(entries[pos], op.pod_uid):
        msg = f"daemon of node {op.node_name} not yet listed (waiting for insertion)"
        raise NotListed(msg)
    current = entries[pos]
    if current.status == op.status:
        return None
    entry = attrs.evolve(current, status=op.status)
    return Planned(_replace(entries, pos, entry), Change.STATUS_SET, entry)


def _plan_remove(
    entries: tuple[DaemonInfo, ...], pos: int | None, op: Deregister
) -> Planned | None:
    if pos is None:
        return None
    current = entries[pos]
    if current.pod_uid is not None and op.pod_uid is not None:
        mine = current.pod_uid == op.pod_uid
    else:
        mine = current.ip_address == op.ip_address
    if not mine:
        return None
    return Planned(entries[:pos] + entries[pos + 1 :], Change.REMOVED, None)
