"""Everything the planners may look at for one ComputeDomain UID, frozen at one instant.

A :class:`Snapshot` is built from the informer caches (read-your-writes views) by
:mod:`computedomain.controller.caches` and handed to :func:`planning.plan`; it is the whole
input of a reconcile, which is why planning is pure and testable as tables. ``live_pods`` is
filled only when a planner asked for a live read (:class:`~.actions.ReadLivePods`) before
dropping a node whose daemon pod is missing from the cache (upstream #1418).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import datetime

import attrs

from computedomain.api import names
from computedomain.controller import objects
from computedomain.controller.config import DaemonSettings
from computedomain.controller.objects import JsonObject


class Mode(enum.StrEnum):
    """How ``status.nodes`` is sourced: from cliques, or by the daemons (the feature gates)."""

    CLIQUES = "cliques"
    STATUS = "status"


@attrs.frozen(kw_only=True)
class Snapshot:
    """The cached state of one domain UID and of every object labelled with it."""

    uid: str
    now: datetime
    settings: DaemonSettings
    mode: Mode
    # IMEX daemons are the host's (docs/compatibility.md#host-managed-imex-daemons).
    host_managed: bool = False
    domain: JsonObject | None = None
    daemon_sets: tuple[JsonObject, ...] = ()
    daemon_templates: tuple[JsonObject, ...] = ()
    workload_templates: tuple[JsonObject, ...] = ()
    # The template at <domain namespace>/<spec name>, whoever owns it (collision detection),
    # and whether the domain its label names (if any) is still in the cache.
    named_template: JsonObject | None = None
    named_template_owner_exists: bool = False
    pods: tuple[JsonObject, ...] = ()
    cliques: tuple[JsonObject, ...] = ()
    labelled_nodes: tuple[str, ...] = ()
    live_pods: tuple[JsonObject, ...] | None = None
    # Set once a live read confirmed that no domain has this UID (before an orphan teardown).
    confirmed_gone: bool = False

    @property
    def effective_pods(self) -> tuple[JsonObject, ...]:
        """The live pods when a live read was made, else the cached ones."""
        return self.live_pods if self.live_pods is not None else self.pods

    @property
    def owned(self) -> tuple[tuple[JsonObject, bool], ...]:
        """``(object, is_daemon_set)`` for the workload template(s), the daemon template(s) and
        the DaemonSet(s), in upstream's teardown order."""
        return (
            *((o, False) for o in self.workload_templates),
            *((o, False) for o in self.daemon_templates),
            *((o, True) for o in self.daemon_sets),
        )

    def in_driver_namespace(self, objs: Sequence[JsonObject]) -> list[JsonObject]:
        return [o for o in objs if objects.namespace(o) == self.settings.namespace]

    def daemon_object(self, objs: Sequence[JsonObject]) -> JsonObject | None:
        """The object named ``computedomain-daemon-<uid>`` in the driver namespace, if cached."""
        wanted = names.daemon_object_name(self.uid)
        return next((o for o in self.in_driver_namespace(objs) if objects.name(o) == wanted), None)
