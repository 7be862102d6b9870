"""The plugin's view of the cluster: informers on the objects prepare reads, and wake-ups.

Four informers, all started (and synced) before the plugin registers with the kubelet:

- ComputeDomains in every namespace, indexed by UID (channel claims name their domain by UID);
- ComputeDomainCliques in the driver namespace (readiness of this node's daemon);
- daemon pods on this node in the driver namespace (to say what a waiting workload waits for);
- this Node (the one-domain-per-node label, read before every compare-and-swap).

:class:`InformerCluster` answers :class:`~computedomain.kubeletplugin.ports.ClusterView` from
their stores. Every change that may end a wait wakes the waiting prepare requests
(:mod:`computedomain.kubeletplugin.wakeups`): a domain's, its clique's or its daemon pod's change
wakes that domain's waiters, a change of the Node wakes the label waiters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.informer import FuncHandler, Informer
from computedomain.kube.rest import Api
from computedomain.kube.store import index_by_uid
from computedomain.kubeletplugin.wakeups import NODE_KEY, Wakeups, domain_key

BY_UID: Final = "uid"
BY_DOMAIN: Final = "domain"
CD_RESYNC: Final = 600.0


def _label(obj: Mapping[str, Any]) -> str:
    return str(
        ((obj.get("metadata") or {}).get("labels") or {}).get(names.COMPUTE_DOMAIN_LABEL, "")
    )


def _by_domain_label(obj: dict[str, Any]) -> list[str]:
    value = _label(obj)
    return [value] if value else []


def _clique_domain(obj: Mapping[str, Any]) -> str:
    """The domain UID of a clique: its label, else the part of its name before the dot."""
    name = str((obj.get("metadata") or {}).get("name", ""))
    return _label(obj) or name.split(".", 1)[0]


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))


class InformerCluster:
    """ClusterView from informer stores, plus the informers themselves (run them)."""

    def __init__(self, api: Api, *, node_name: str, namespace: str, wakeups: Wakeups) -> None:
        self.node_name = node_name
        self.namespace = namespace
        self.wakeups = wakeups
        self.domains = Informer(
            api,
            resources.COMPUTE_DOMAINS,
            resync_period=CD_RESYNC,
            indexers={BY_UID: index_by_uid},
            name="computedomains",
        )
        self.cliques = Informer(
            api, resources.COMPUTE_DOMAIN_CLIQUES, namespace=namespace, name="cliques"
        )
        self.pods = Informer(
            api,
            resources.PODS,
            namespace=namespace,
            label_selector=names.COMPUTE_DOMAIN_LABEL,
            field_selector=f"spec.nodeName={node_name}",
            indexers={BY_DOMAIN: _by_domain_label},
            name="daemon-pods",
        )
        self.node = Informer(
            api, resources.NODES, field_selector=f"metadata.name={node_name}", name="node"
        )
        self._wake_on(self.domains, _uid)
        self._wake_on(self.cliques, _clique_domain)
        self._wake_on(self.pods, _label)
        self.node.add_handler(
            FuncHandler(
                add=lambda _: wakeups.notify(NODE_KEY),
                update=lambda _, __: wakeups.notify(NODE_KEY),
                delete=lambda _: wakeups.notify(NODE_KEY),
            )
        )

    def _wake_on(self, informer: Informer, domain_of: Any) -> None:
        def wake(obj: dict[str, Any]) -> None:
            uid = domain_of(obj)
            if uid:
                self.wakeups.notify(domain_key(uid))

        informer.add_handler(FuncHandler(add=wake, update=lambda _, new: wake(new), delete=wake))

    @property
    def informers(self) -> tuple[Informer, ...]:
        return (self.domains, self.cliques, self.pods, self.node)

    @property
    def synced(self) -> bool:
        return all(i.has_synced for i in self.informers)

    def domain(self, uid: str) -> Mapping[str, Any] | None:
        found = self.domains.store.by_index(BY_UID, uid)
        return found[0] if found else None

    def clique(self, name: str) -> Mapping[str, Any] | None:
        return self.cliques.store.get(f"{self.namespace}/{name}")

    def daemon_pod(self, domain_uid: str) -> Mapping[str, Any] | None:
        pods = self.pods.store.by_index(BY_DOMAIN, domain_uid)
        if not pods:
            return None
        # Prefer a pod that is not terminating (a replacement may already exist).
        return sorted(pods, key=lambda p: bool((p.get("metadata") or {}).get("deletionTimestamp")))[
            0
        ]
