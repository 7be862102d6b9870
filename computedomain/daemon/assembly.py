"""Building one daemon's registration and file-keeping parts, ready to run.

Used by :mod:`computedomain.daemon.runner` (the real ``run``, which adds the keeper, events and
the supervisor) and by the property suites and ``bench/daemon_join.py``, which run many
daemons' real registration code in one process against one API server. Pure construction: it
starts nothing and does no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine
from typing import Any

import attrs

from computedomain.api.errors import ComputeDomainError
from computedomain.daemon import imexsync
from computedomain.daemon.identity import Identity
from computedomain.daemon.imexsync import Mailbox, Snapshot, Sync
from computedomain.daemon.indexmemory import IndexMemory
from computedomain.daemon.modes import Mode, Paths, Want
from computedomain.daemon.reconcile import LatestObject, MembershipLoop
from computedomain.daemon.registration import Registrar
from computedomain.daemon.shapes import Shape
from computedomain.kube import resources
from computedomain.kube.informer import FuncHandler, Informer
from computedomain.kube.rest import Api
from computedomain.policies.hookspecs import DnsNamePolicy, IndexPolicy

RESYNC_PERIOD = 240.0  # upstream's 4 min: a resync re-delivers a missed readiness change


@attrs.define
class Parts:
    """One daemon's long-running parts (not started)."""

    identity: Identity
    shape: Shape
    registrar: Registrar
    loop: MembershipLoop
    mailbox: Mailbox[Snapshot]
    sync: Sync
    membership_informer: Informer
    pod_informer: Informer

    def tasks(
        self, on_refused: Callable[[ComputeDomainError], None] = lambda _: None
    ) -> dict[str, Coroutine[Any, Any, None]]:
        """The coroutines to run, by name, in start order."""
        return {
            "watch-membership": self.membership_informer.run(),
            "watch-pod": self.pod_informer.run(),
            "imex-sync": imexsync.run(self.mailbox, self.sync, on_refused=on_refused),
            "membership": self.loop.run(),
        }


def assemble(
    api: Api,
    identity: Identity,
    *,
    mode: Mode,
    limit: int,
    index_policy: IndexPolicy,
    dns_policy: DnsNamePolicy,
    paths: Paths,
    want: Want,
    blocked: Callable[[], bool] = lambda: False,
    report: Callable[[ComputeDomainError], None] = lambda _: None,
    rng: random.Random | None = None,
    resync_period: float | None = RESYNC_PERIOD,
    memory: IndexMemory | None = None,
) -> Parts:
    """Wire the parts of one daemon. Pure construction."""
    rng = rng or random.Random()
    shape = mode.shape(identity, limit)
    cache = LatestObject()
    registrar = Registrar(api, shape, index_policy, cached=cache.get, rng=rng)
    mailbox: Mailbox[Snapshot] = Mailbox()
    membership_informer = Informer(
        api,
        shape.resource,
        namespace=shape.namespace,
        field_selector=f"metadata.name={shape.name}",
        resync_period=resync_period,
        name=f"{shape.resource.plural}/{shape.name}",
    )
    loop = MembershipLoop(
        registrar,
        cache,
        identity,
        publish=mailbox.put,
        # Once the watch has listed, an absent object is known to be absent: no GET needed.
        listed=lambda: membership_informer.has_synced,
        blocked=blocked,
        report=report,
        rng=rng,
        remembered=memory.load(identity.clique_id) if memory is not None else None,
        on_index=(lambda index: memory.save(identity.clique_id, index))
        if memory is not None
        else (lambda _: None),
    )
    membership_informer.add_handler(
        FuncHandler(
            add=loop.observe,
            update=lambda _, new: loop.observe(new),
            delete=loop.observe_deleted,
        )
    )
    pod_informer = Informer(
        api,
        resources.PODS,
        namespace=identity.pod_namespace,
        field_selector=f"metadata.name={identity.pod_name}",
        resync_period=resync_period,
        name=f"pods/{identity.pod_name}",
    )
    pod_informer.add_handler(
        FuncHandler(add=loop.observe_pod, update=lambda _, new: loop.observe_pod(new))
    )
    sync = mode.sync(identity, paths, want, dns_policy, limit)
    return Parts(identity, shape, registrar, loop, mailbox, sync, membership_informer, pod_informer)
