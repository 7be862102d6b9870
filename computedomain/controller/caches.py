"""The controller's view of the cluster: informers, read-your-writes caches, snapshots.

One informer per watched kind: ComputeDomains and nodes
cluster-wide; DaemonSets, daemon pods and cliques (clique mode only) in each managed namespace;
and **all** ResourceClaimTemplates cluster-wide, so that a workload template name taken by an
object that is not ours is seen, and its changes re-evaluate the collision (upstream watched
only labelled templates and retried AlreadyExists forever). Every object is indexed
by the domain label; :meth:`Caches.snapshot` gathers one UID's objects from all namespaces at
once, which makes a single status aggregator for all managed namespaces (upstream ran one per
namespace, and those that saw none of a domain's daemons overwrote its status).

Writes go through :meth:`Caches.record` into read-your-writes layers
(:class:`~computedomain.kube.mutationcache.MutationCache`), so a reconcile sees its own creates
and updates before the watch does and never creates an object twice. An object the server is
about to remove (terminating, no finalizers left) is forgotten rather than recorded, so it
cannot linger as a phantom (upstream's read-your-writes caches kept deleted objects alive for
up to an hour).

With host-managed IMEX (docs/compatibility.md#host-managed-imex-daemons) there are no daemons,
cliques or node labels to track: only the domain and template informers run, as upstream runs
only its workload-template manager then.

Built by :class:`~computedomain.controller.controller.Controller`; read by the reconciler and
the cleanup loop; calls the kube layer only.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from computedomain.api import names
from computedomain.controller import objects
from computedomain.controller.actions import Kind, Ref
from computedomain.controller.config import ControllerConfig
from computedomain.controller.objects import JsonObject
from computedomain.controller.snapshot import Mode, Snapshot
from computedomain.kube import resources
from computedomain.kube.informer import Informer
from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.rest import Api
from computedomain.kube.store import IndexFunc, index_by_label, index_by_uid, object_key
from computedomain.runtime.clock import Clock

BY_DOMAIN = "domain"
BY_UID = "uid"
BY_TARGET = "target"  # "<Daemon|Workload>/<uid>" for templates carrying both labels
BY_WORKLOAD_TEMPLATE = "workload-template"  # "<namespace>/<spec name>" of each domain


def _by_target(obj: dict[str, Any]) -> list[str]:
    uid = objects.domain_uid(obj)
    target = objects.label(obj, names.TARGET_LABEL)
    return (
        [f"{target}/{uid}"]
        if uid and target in (names.TARGET_DAEMON, names.TARGET_WORKLOAD)
        else []
    )


def _by_workload_template(obj: dict[str, Any]) -> list[str]:
    channel = (obj.get("spec") or {}).get("channel") or {}
    name = (channel.get("resourceClaimTemplate") or {}).get("name")
    namespace = objects.namespace(obj)
    return [f"{namespace}/{name}"] if isinstance(name, str) and name and namespace else []


_BY_DOMAIN: dict[str, IndexFunc] = {BY_DOMAIN: index_by_label(names.COMPUTE_DOMAIN_LABEL)}


class Caches:
    """Every informer of the controller, with its read-your-writes layer."""

    def __init__(self, api: Api, config: ControllerConfig, *, clock: Clock | None = None) -> None:
        self.config = config
        self.mode = Mode.CLIQUES if config.features.compute_domain_cliques else Mode.STATUS
        self.host_managed = config.imex.host_managed
        resync = config.resync_period or None
        selector = names.COMPUTE_DOMAIN_LABEL  # "label exists"
        # Host-managed: no daemon DaemonSets, pods or cliques in any namespace, no node labels.
        namespaces = () if self.host_managed else config.managed_namespaces

        def informer(resource: resources.Resource, **kwargs: Any) -> Informer:
            return Informer(api, resource, clock=clock, **kwargs)

        self.domains = informer(
            resources.COMPUTE_DOMAINS,
            resync_period=resync,
            indexers={BY_UID: index_by_uid, BY_WORKLOAD_TEMPLATE: _by_workload_template},
            name="computedomains",
        )
        self.templates = informer(
            resources.RESOURCE_CLAIM_TEMPLATES,
            indexers={**_BY_DOMAIN, BY_TARGET: _by_target},
            name="resourceclaimtemplates",
        )
        self.nodes = (
            None
            if self.host_managed
            else informer(
                resources.NODES, label_selector=selector, indexers=_BY_DOMAIN, name="nodes"
            )
        )
        self.daemon_sets = {
            ns: informer(
                resources.DAEMON_SETS,
                namespace=ns,
                label_selector=selector,
                indexers=_BY_DOMAIN,
                name=f"daemonsets/{ns}",
            )
            for ns in namespaces
        }
        self.pods = {
            ns: informer(
                resources.PODS,
                namespace=ns,
                label_selector=selector,
                indexers=_BY_DOMAIN,
                name=f"pods/{ns}",
            )
            for ns in namespaces
        }
        self.cliques = (
            {
                ns: informer(
                    resources.COMPUTE_DOMAIN_CLIQUES,
                    namespace=ns,
                    indexers=_BY_DOMAIN,
                    name=f"cliques/{ns}",
                )
                for ns in namespaces
            }
            if self.mode is Mode.CLIQUES
            else {}
        )
        # Read-your-writes layers over what we write; each drops its entries on the watch's
        # deletes because it is registered as a handler before anything else.
        self._written: dict[tuple[Kind, str], MutationCache] = {}
        self.domains_written = self._layer(Kind.COMPUTE_DOMAIN, "", self.domains, clock)
        self.templates_written = self._layer(
            Kind.RESOURCE_CLAIM_TEMPLATE, "", self.templates, clock
        )
        self.daemon_sets_written = {
            ns: self._layer(Kind.DAEMON_SET, ns, inf, clock) for ns, inf in self.daemon_sets.items()
        }
        self.cliques_written = {
            ns: self._layer(Kind.CLIQUE, ns, inf, clock) for ns, inf in self.cliques.items()
        }

    def _layer(
        self, kind: Kind, namespace: str, informer: Informer, clock: Clock | None
    ) -> MutationCache:
        cache = MutationCache(informer.store, clock=clock)
        informer.add_handler(cache)
        self._written[(kind, namespace)] = cache
        return cache

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def labelled_informers(self) -> list[Informer]:
        """The informers of objects found by the domain label (nodes, DaemonSets, daemon pods,
        cliques); none with host-managed IMEX."""
        return [
            *([self.nodes] if self.nodes is not None else []),
            *self.daemon_sets.values(),
            *self.pods.values(),
            *self.cliques.values(),
        ]

    @property
    def informers(self) -> list[Informer]:
        """Every informer, the domain informer first."""
        return [self.domains, self.templates, *self.labelled_informers]

    @property
    def synced(self) -> bool:
        return all(inf.has_synced for inf in self.informers)

    async def wait_for_sync(self) -> None:
        """Wait for the domain cache first (cleanup treats "absent" as "gone"), then the rest."""
        await self.domains.wait_for_sync()
        await asyncio.gather(*(inf.wait_for_sync() for inf in self.informers[1:]))

    # -- reads -------------------------------------------------------------------------------

    def domain_by_uid(self, uid: str) -> JsonObject | None:
        found = self.domains_written.by_index(BY_UID, uid)
        return found[0] if found else None

    def domain_exists(self, uid: str) -> bool:
        """True if the synced cache (not our own writes) holds a domain with this UID."""
        return bool(self.domains.store.index_keys(BY_UID, uid))

    def domains_wanting_template(self, namespace: str, name: str) -> list[str]:
        """UIDs of the domains whose workload template is ``namespace/name``."""
        found = self.domains.store.by_index(BY_WORKLOAD_TEMPLATE, f"{namespace}/{name}")
        return [objects.uid(d) for d in found if objects.uid(d)]

    def latest(self, ref: Ref) -> JsonObject | None:
        """The newest known copy of the object ``ref`` names (cache or our last write)."""
        cache = self._cache_for(ref.kind, ref.namespace)
        return None if cache is None else cache.get(f"{ref.namespace}/{ref.name}")

    def snapshot(self, uid: str, *, now: datetime) -> Snapshot:
        """Everything the planners may read about ``uid``, from the caches. No I/O."""
        domain = self.domain_by_uid(uid)
        named: JsonObject | None = None
        owner_exists = False
        if domain is not None:
            keys = _by_workload_template(dict(domain))
            named = self.templates_written.get(keys[0]) if keys else None
            owner = objects.domain_uid(named) if named is not None else None
            owner_exists = owner is not None and self.domain_by_uid(owner) is not None
        return Snapshot(
            uid=uid,
            now=now,
            settings=self.config.daemon,
            mode=self.mode,
            host_managed=self.host_managed,
            domain=domain,
            daemon_sets=_gather(
                c.by_index(BY_DOMAIN, uid) for c in self.daemon_sets_written.values()
            ),
            daemon_templates=tuple(
                self.templates_written.by_index(BY_TARGET, f"{names.TARGET_DAEMON}/{uid}")
            ),
            workload_templates=tuple(
                self.templates_written.by_index(BY_TARGET, f"{names.TARGET_WORKLOAD}/{uid}")
            ),
            named_template=named,
            named_template_owner_exists=owner_exists,
            pods=_gather(inf.store.by_index(BY_DOMAIN, uid) for inf in self.pods.values()),
            cliques=_gather(c.by_index(BY_DOMAIN, uid) for c in self.cliques_written.values()),
            labelled_nodes=tuple(
                objects.name(n)
                for n in (self.nodes.store.by_index(BY_DOMAIN, uid) if self.nodes else ())
            ),
        )

    def labelled_uids(self, *, nodes_only: bool = False) -> set[str]:
        """Every domain UID some cached DaemonSet, template or node is labelled with."""
        found = set(self.nodes.store.index_values(BY_DOMAIN)) if self.nodes else set()
        if not nodes_only:
            for inf in self.daemon_sets.values():
                found.update(inf.store.index_values(BY_DOMAIN))
            found.update(v.partition("/")[2] for v in self.templates.store.index_values(BY_TARGET))
        return found

    # -- writes ------------------------------------------------------------------------------

    def record(self, kind: Kind, obj: JsonObject) -> None:
        """Remember what the server returned to our write (read-your-writes).

        An object that is terminating with no finalizer left is gone as far as we care: it is
        forgotten instead, so a late record cannot outlive the watch's delete event.
        """
        cache = self._cache_for(kind, objects.namespace(obj))
        if cache is None or not objects.name(obj):
            return
        if objects.terminating(obj) and not objects.finalizers(obj):
            cache.forget(object_key(obj))
        else:
            cache.mutation(dict(obj))

    def forget(self, ref: Ref) -> None:
        """Drop our record of ``ref`` (it was deleted, or our copy is known to be wrong)."""
        cache = self._cache_for(ref.kind, ref.namespace)
        if cache is not None:
            cache.forget(f"{ref.namespace}/{ref.name}")

    def _cache_for(self, kind: Kind, namespace: str) -> MutationCache | None:
        if kind in (Kind.COMPUTE_DOMAIN, Kind.RESOURCE_CLAIM_TEMPLATE):
            return self._written[(kind, "")]
        return self._written.get((kind, namespace))


def _gather(groups: Iterable[list[dict[str, Any]]]) -> tuple[JsonObject, ...]:
    return tuple(itertools.chain.from_iterable(groups))
