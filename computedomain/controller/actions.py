"""What a reconcile decides to do: small frozen values, produced by the planners, run by apply.

The planners (:mod:`~computedomain.controller.planning`, :mod:`~.deletion`, :mod:`~.orphans`,
:mod:`~.pruning`, :mod:`~.statusplan`) return tuples of these and never touch the API;
:mod:`~computedomain.controller.applying` executes them in order. Keeping decisions as data
makes every rule testable as a table and makes a reconcile's effects visible in logs.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final

import attrs

# Seconds after which a waiting domain is planned again even without an event.
WAIT_RECHECK: Final = 5.0


class Kind(enum.StrEnum):
    """The kinds of object actions name; apply maps each to its API resource."""

    COMPUTE_DOMAIN = "ComputeDomain"
    DAEMON_SET = "DaemonSet"
    RESOURCE_CLAIM_TEMPLATE = "ResourceClaimTemplate"
    CLIQUE = "ComputeDomainClique"


@attrs.frozen
class Ref:
    """One object by kind, namespace and name; ``uid`` pins the exact incarnation when known."""

    kind: Kind
    namespace: str
    name: str
    uid: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@attrs.frozen
class AddFinalizer:
    """Append our finalizer to the ComputeDomain (a compare-and-swap update)."""

    ref: Ref


@attrs.frozen
class RemoveFinalizer:
    """Drop our finalizer, if the latest copy is terminating and still carries it."""

    ref: Ref


@attrs.frozen
class Create:
    """Create ``body``; AlreadyExists means a previous attempt (or cache lag) got there first."""

    ref: Ref
    body: Mapping[str, Any]


@attrs.frozen
class Delete:
    """Delete the object (uid precondition when known); NotFound means done."""

    ref: Ref


@attrs.frozen
class RemoveNodeLabels:
    """Remove the domain label from every node carrying this UID (a live LIST, then updates)."""

    domain_uid: str


@attrs.frozen
class WriteStatus:
    """Write ``status`` (wire form) to the domain's latest copy (compare-and-swap).

    ``based_on`` is the status the plan read; if the latest copy holds another one (a daemon
    wrote meanwhile), apply re-plans instead of overwriting it.
    """

    ref: Ref
    status: Mapping[str, Any]
    global_status: str
    based_on: Mapping[str, Any] | None = None


@attrs.frozen
class PruneClique:
    """Remove the entries of ``nodes`` from a clique's ``daemons`` (compare-and-swap).

    Applied only to the clique version the plan saw (``resource_version``); a newer one means
    a daemon changed it meanwhile, and apply re-plans.
    """

    ref: Ref
    nodes: frozenset[str]
    resource_version: str = ""


@attrs.frozen
class ReadLivePods:
    """The planner cannot decide from the cache alone: list this domain's daemon pods live."""

    domain_uid: str


@attrs.frozen
class ConfirmGone:
    """The cache has no domain with this UID but its remains exist: confirm with a live read
    before tearing them down (the domain cache may lag behind a just-created domain)."""

    domain_uid: str


@attrs.frozen
class Emit:
    """Record a Kubernetes Event on the domain."""

    type: str  # "Normal" | "Warning"
    reason: str
    message: str


@attrs.frozen
class ForgetDomain:
    """The domain is gone: drop its metrics and bookkeeping."""

    domain_uid: str


@attrs.frozen
class Wait:
    """After the other actions, wait for a change with ``message`` (a TemporaryError).

    What is waited for moves on by itself and its informer event queues the domain again, so
    a wait is not retried on the work queue's backoff; ``recheck`` seconds later the domain is
    planned once more all the same, a safety net that also reports a wait that lasts.
    """

    message: str
    recheck: float = WAIT_RECHECK


@attrs.frozen
class Fail:
    """After the other actions, report a permanent problem (PermanentError) with ``message``."""

    message: str


Action = (
    AddFinalizer
    | RemoveFinalizer
    | Create
    | Delete
    | RemoveNodeLabels
    | WriteStatus
    | PruneClique
    | ReadLivePods
    | ConfirmGone
    | Emit
    | ForgetDomain
    | Wait
    | Fail
)
