"""The simulated DaemonSet controller: runs :func:`.daemonset.plan` for each DaemonSet and
applies it (create and delete pods, write the status).

Started by :mod:`computedomain_sim.cluster`. Event-driven: a DaemonSet is synced when it
changes, when one of its pods changes, when a node is added that should run its pod, when a
node changes so that whether it should run (or keep) its pod changes (labels, taints,
readiness; not heartbeats), and when any node is deleted.
Pods are created with the controller's name suffixes, in slow-start batches
(:mod:`.slowstart`); :mod:`.expectations` keeps a second sync from creating a pod the watch has
not reported yet. Deletes carry the pod's UID as precondition, so a replacement pod of the same
name is never deleted by mistake.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from computedomain.kube import errors
from computedomain.kube.informer import EnqueueHandler, FuncHandler
from computedomain.kube.resources import DAEMON_SETS, NODES, PODS
from computedomain.kube.store import index_by_owner_uid, object_key
from computedomain.kube.workqueue import RateLimitingQueue
from computedomain_sim.scheduler import placement

from . import daemonset, names, slowstart
from .expectations import Expectations
from .running import ControlPlaneController, run_controller

__all__ = ["DaemonSetController", "PodNames", "candidate_nodes", "owner_key"]

Obj = Mapping[str, Any]
# DaemonSets synced at once (different DaemonSets only: the queue never hands one key to two
# workers). kube-controller-manager syncs 2 at a time against an API server that creates a pod
# in milliseconds; here a create under load takes ~100 ms, and a forming domain's node labels
# land one by one, each a sync of its DaemonSet that creates one pod. With one worker the
# 1,152 daemon pods of 64 domains were created one after another, the last 44 s after the
# domains (bench/scale.py's timeline): the simulated control plane, not the driver, was the
# bottleneck. Ten, as the simulated resourceclaim controller runs.
WORKERS = 10


def owner_key(kind: str) -> Any:
    """An enqueue-key function: the ``ns/name`` of a pod's controller of ``kind``, or None."""

    def key(pod: Obj) -> str | None:
        meta = pod.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == kind:
                return f"{meta.get('namespace', '')}/{ref.get('name', '')}"
        return None

    return key


def candidate_nodes(ds: Obj, nodes: Sequence[Obj], pods: Sequence[Obj]) -> list[Obj]:
    """The nodes :func:`.daemonset.plan` has to look at: those whose labels match the pod
    template's ``nodeSelector`` and those that hold one of ``pods``. Pure.

    Any other node neither fits (a node the selector rejects never does) nor has a pod to
    delete or count, so leaving it out changes no decision and no status number; it saves the
    full fit check of every node on every sync, which with a DaemonSet per domain would
    dominate the controller's work.
    """
    selector = node_selector(ds)
    if not selector:
        return list(nodes)
    hosting = {str((p.get("spec") or {}).get("nodeName") or "") for p in pods}
    hosting |= {daemonset.affinity_node(p) for p in pods}
    return [
        node
        for node in nodes
        if str(node["metadata"]["name"]) in hosting
        or all(
            ((node.get("metadata") or {}).get("labels") or {}).get(key) == value
            for key, value in selector.items()
        )
    ]


def node_selector(ds: Obj) -> Mapping[str, str]:
    """The pod template's ``nodeSelector`` (empty when none). Pure."""
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    return spec.get("nodeSelector") or {}


def _selects(ds: Obj, node: Obj) -> bool:
    """Whether the node's labels satisfy the pod template's ``nodeSelector`` (the rest of the
    fit is :func:`.daemonset.should_run`'s). Pure."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in node_selector(ds).items())


def label_pairs(node: Obj) -> list[str]:
    """``key=value`` for each label of ``node``: an index function. Pure."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return [f"{key}={value}" for key, value in labels.items()]


class PodNames(Mapping[str, str]):
    """Node name -> the name of a new pod there (``base`` plus a random suffix), made only for
    the nodes a pod is created on, not for every node on every sync."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._made: dict[str, str] = {}

    def __getitem__(self, node: str) -> str:
        if node not in self._made:
            self._made[node] = names.with_suffix(self.base)
        return self._made[node]

    def __iter__(self) -> Iterator[str]:
        return iter(self._made)

    def __len__(self) -> int:
        return len(self._made)


class DaemonSetController(ControlPlaneController):
    """One pod per fitting node for every DaemonSet."""

    def _wire(self) -> None:
        # DaemonSet UID -> (generation, its pod without a node): what fit checks use.
        self._probes: dict[str, tuple[object, Obj]] = {}
        self.daemonsets = self.factory.informer(DAEMON_SETS)
        self.nodes = self.factory.informer(NODES, indexers={"label": label_pairs})
        self.pods = self.factory.informer(PODS, indexers={"owner": index_by_owner_uid})
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="daemonset", clock=self.clock)
        self.expectations = Expectations(clock=self.clock)
        self.daemonsets.add_handler(EnqueueHandler(self.queue))
        self.daemonsets.add_handler(FuncHandler(delete=self._forget))
        self.pods.add_handler(
            FuncHandler(
                add=self.expectations.observed,
                update=lambda _o, n: self.expectations.observed(n),
                delete=lambda o: self.expectations.observed(o, gone=True),
            )
        )
        self.pods.add_handler(EnqueueHandler(self.queue, key=owner_key("DaemonSet")))
        self.nodes.add_handler(
            FuncHandler(add=self._node_added, update=self._node_updated, delete=self._all)
        )

    def _probe(self, ds: Obj) -> Obj:
        """``ds``'s pod without a node (:func:`.daemonset.should_run`'s probe), made once per
        generation of the DaemonSet (what it uses beside the spec cannot change: name,
        namespace, UID): a deep copy of its template per sync and per node event would be most
        of this controller's work at scale, and a status write is a new version."""
        meta = ds["metadata"]
        uid, version = str(meta.get("uid", "")), meta.get("generation")
        cached = self._probes.get(uid)
        if cached is None or cached[0] != version:
            cached = self._probes[uid] = (version, daemonset.pod_for_node(ds, None, "probe"))
        return cached[1]

    def _forget(self, ds: Obj) -> None:
        self._probes.pop(str(ds["metadata"].get("uid", "")), None)

    def _node_added(self, node: Obj) -> None:
        """Sync the DaemonSets that want a pod on the new node."""
        for ds in self.daemonsets.store.list():
            if _selects(ds, node) and any(daemonset.should_run(ds, node, probe=self._probe(ds))):
                self.queue.add(object_key(ds))

    def _node_updated(self, old: Obj, new: Obj) -> None:
        """Sync the DaemonSets whose decision for this node changed, as
        kube-controller-manager does: a node's label makes one DaemonSet (its domain's) run a
        pod there, and syncing all of them on every label was a sync of every DaemonSet per
        node joining a domain. Heartbeats change nothing."""
        if not placement.fit_view_changed(old, new):
            return
        for ds in self.daemonsets.store.list():
            if not (_selects(ds, old) or _selects(ds, new)):
                continue  # its nodeSelector rules the node out before and after
            probe = self._probe(ds)
            if daemonset.should_run(ds, old, probe=probe) != daemonset.should_run(
                ds, new, probe=probe
            ):
                self.queue.add(object_key(ds))

    def _nodes_to_consider(self, ds: Obj, pods: Sequence[Obj]) -> Sequence[Obj]:
        """Every node, or (when the template has a node selector) the nodes carrying one of
        its labels plus those holding ``pods``: a superset of :func:`candidate_nodes` found
        through the label index instead of a scan of every node."""
        selector = node_selector(ds)
        if not selector:
            return self.nodes.store.list()
        key, value = min(selector.items())
        found = {
            str(n["metadata"]["name"]): n
            for n in self.nodes.store.by_index("label", f"{key}={value}")
        }
        for pod in pods:
            for name in (
                str((pod.get("spec") or {}).get("nodeName") or ""),
                daemonset.affinity_node(pod),
            ):
                node = self.nodes.store.get(name) if name and name not in found else None
                if node is not None:
                    found[name] = node
        return list(found.values())

    def _all(self, *_: Obj) -> None:
        for ds in self.daemonsets.store.list():
            self.queue.add(object_key(ds))

    async def run(self) -> None:
        """Run until cancelled."""
        await run_controller(
            self.factory,
            (self.daemonsets, self.nodes, self.pods),
            self.queue,
            self.sync,
            workers=WORKERS,
        )

    async def _create_pod(self, ds: Obj, pod: dict[str, Any], namespace: str) -> None:
        try:
            created = await self.api.create(PODS, pod, namespace)
        except errors.AlreadyExists:
            return  # a name collision: the next sync picks another suffix
        self.expectations.created(created)
        message = f"Created pod: {created['metadata']['name']}"
        self.events.event(dict(ds), "Normal", "SuccessfulCreate", message)

    async def sync(self, key: str) -> None:
        """Reconcile one DaemonSet. Raises API errors (the queue retries)."""
        ds = self.daemonsets.store.get(key)
        if ds is None:
            return  # its pods go with it (owner garbage collection)
        uid = str(ds["metadata"]["uid"])
        owned = [
            p
            for p in self.pods.store.by_index("owner", uid)
            if any(
                r.get("uid") == uid and r.get("controller")
                for r in p["metadata"].get("ownerReferences") or []
            )
        ]
        pods = self.expectations.adjust(owned, uid)
        nodes = candidate_nodes(ds, self._nodes_to_consider(ds, pods), pods)
        plan = daemonset.plan(
            ds, nodes, pods, PodNames(f"{ds['metadata']['name']}-"), probe=self._probe(ds)
        )
        namespace = str(ds["metadata"]["namespace"])
        await slowstart.create_all(
            [c.pod for c in plan.creates], lambda pod: self._create_pod(ds, pod, namespace)
        )
        for delete in plan.deletes:
            self.expectations.deleted(f"{delete.namespace}/{delete.name}")
            try:
                await self.api.delete(PODS, delete.name, delete.namespace, uid=delete.uid)
            except (errors.NotFound, errors.Conflict):
                continue
            self.events.event(
                dict(ds),
                "Normal",
                "SuccessfulDelete",
                f"Deleted pod: {delete.name} ({delete.reason})",
            )
        current = {k: v for k, v in (ds.get("status") or {}).items() if k in plan.status}
        if current != plan.status:
            try:
                await self.api.patch(
                    DAEMON_SETS,
                    ds["metadata"]["name"],
                    {"status": plan.status},
                    namespace=namespace,
                    subresource="status",
                )
            except errors.NotFound:
                return
