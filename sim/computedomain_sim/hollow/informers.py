"""One set of informers shared by every hollow node of a process, and per-node views of them.

Used by :mod:`.plugin` (each hollow kubelet plugin's cluster view and Node cache) and
:mod:`.kubelet` (the pods bound to each node); ``bench/scale.py`` follows the pods through the
same pod informer. Calls :class:`computedomain.kube.informer.Informer`.

Deviation from a real cluster, on purpose: a real node's plugin runs four informers of its own
(ComputeDomains, cliques, its daemon pods, its Node) and its kubelet one more (its pods). With
1,152 nodes on one machine that would be ~5,800 watch streams, and the API server would offer
every clique and pod event to all of them: the fan-out, not our components, would be what the
benchmark measures, and one process could not hold the caches. Here one informer per resource
serves every node of the process, indexed by node; each node's view answers exactly the
questions its own informers would (:class:`NodeView` is the plugin's
:class:`~computedomain.kubeletplugin.ports.ClusterView`). Wake-ups go to one shared
:class:`~computedomain.kubeletplugin.wakeups.Wakeups` through the plugin's own handlers
(:func:`~computedomain.kubeletplugin.cluster.wake_handlers`): their keys name the domain and the
node, so a change reaches the waiters it concerns; a node-label wake-up reaching another node's
waiter is harmless (waking early is always safe: the attempt re-checks everything).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.informer import Informer
from computedomain.kube.rest import Api
from computedomain.kube.store import Store, index_by_node_name, index_by_uid
from computedomain.kubeletplugin import cluster as plugin_cluster
from computedomain.kubeletplugin.wakeups import Wakeups

__all__ = ["NodeView", "SharedInformers"]

BY_UID: Final = plugin_cluster.BY_UID
BY_NODE: Final = "node"
BY_NODE_DOMAIN: Final = "node-domain"


def _label(obj: Mapping[str, Any]) -> str:
    return str(
        ((obj.get("metadata") or {}).get("labels") or {}).get(names.COMPUTE_DOMAIN_LABEL, "")
    )


def _by_node_domain(obj: dict[str, Any]) -> list[str]:
    node = str((obj.get("spec") or {}).get("nodeName") or "")
    domain = _label(obj)
    return [f"{node}/{domain}"] if node and domain else []


class SharedInformers:
    """Cluster-wide informers for the hollow nodes of one process (run them with :meth:`run`)."""

    def __init__(self, api: Api, *, namespace: str) -> None:
        self.namespace = namespace
        self.wakeups = Wakeups()
        self.domains = Informer(
            api,
            resources.COMPUTE_DOMAINS,
            resync_period=plugin_cluster.CD_RESYNC,
            indexers={BY_UID: index_by_uid},
            name="hollow-computedomains",
        )
        self.cliques = Informer(
            api, resources.COMPUTE_DOMAIN_CLIQUES, namespace=namespace, name="hollow-cliques"
        )
        # Every pod: the kubelets want theirs by node, the plugins the daemon pods by
        # (node, domain).
        self.pods = Informer(
            api,
            resources.PODS,
            indexers={BY_NODE: index_by_node_name, BY_NODE_DOMAIN: _by_node_domain},
            name="hollow-pods",
        )
        self.nodes = Informer(api, resources.NODES, name="hollow-nodes")
        handlers = plugin_cluster.wake_handlers(self.wakeups)
        self.domains.add_handler(handlers.domains)
        self.cliques.add_handler(handlers.cliques)
        self.pods.add_handler(handlers.pods)
        self.nodes.add_handler(handlers.node)

    @property
    def informers(self) -> tuple[Informer, ...]:
        return (self.domains, self.cliques, self.pods, self.nodes)

    @property
    def synced(self) -> bool:
        return all(i.has_synced for i in self.informers)

    async def wait_for_sync(self) -> None:
        for informer in self.informers:
            await informer.wait_for_sync()

    def view(self, node_name: str) -> NodeView:
        return NodeView(self, node_name)

    def pods_of(self, node_name: str) -> list[dict[str, Any]]:
        """The pods bound to ``node_name`` (what that node's kubelet informer would hold)."""
        return self.pods.store.by_index(BY_NODE, node_name)


class NodeView:
    """One node's :class:`~computedomain.kubeletplugin.ports.ClusterView` over the shared
    stores, answering as :class:`~computedomain.kubeletplugin.cluster.InformerCluster` does."""

    def __init__(self, shared: SharedInformers, node_name: str) -> None:
        self.shared = shared
        self.node_name = node_name

    @property
    def node_store(self) -> Store:
        """The Node cache (all Nodes, keyed by name: this node's entry is what is read)."""
        return self.shared.nodes.store

    def domain(self, uid: str) -> Mapping[str, Any] | None:
        found = self.shared.domains.store.by_index(BY_UID, uid)
        return found[0] if found else None

    def clique(self, name: str) -> Mapping[str, Any] | None:
        return self.shared.cliques.store.get(f"{self.shared.namespace}/{name}")

    def daemon_pod(self, domain_uid: str) -> Mapping[str, Any] | None:
        pods = [
            p
            for p in self.shared.pods.store.by_index(
                BY_NODE_DOMAIN, f"{self.node_name}/{domain_uid}"
            )
            if (p.get("metadata") or {}).get("namespace") == self.shared.namespace
        ]
        if not pods:
            return None
        return sorted(pods, key=lambda p: bool((p.get("metadata") or {}).get("deletionTimestamp")))[
            0
        ]
