"""The plugin's view of the cluster: informers on the objects prepare reads, and wake-ups.

Four informers, all started (and synced) before the plugin registers with the kubelet:

- ComputeDomains in every namespace, indexed by UID (channel claims name their domain by UID);
- ComputeDomainCliques of this node's clique in the driver namespace (readiness of this node's
  daemon), selected by their ``resource.nvidia.com/computeDomain.cliqueID`` label, which every
  daemon (ours and upstream's) sets when it creates one: a node needs only its own rack's
  clique, and watching every clique made each of the cluster's plugins decode every daemon's
  every write (a quadratic watch load: 64 racks, 64 times the events). A clique that lost the
  label (edited by hand) is not seen; readiness then comes from the domain's ``status.nodes``,
  which the controller fills from the cliques, as for a domain without cliques. A node without
  a clique ID watches them all (it reads none of them). When the clique refresh moves the node
  to another clique, the informer relists with the new clique's selector;
- daemon pods on this node in the driver namespace (to say what a waiting workload waits for);
- this Node (the one-domain-per-node label, read before every compare-and-swap).

:class:`InformerCluster` answers :class:`~computedomain.kubeletplugin.ports.ClusterView` from
their stores. Every change that may end a wait wakes the waiting prepare requests
(:mod:`computedomain.kubeletplugin.wakeups`) through :func:`wake_handlers`: a change of a node's
entry in a domain's clique or status, or of its daemon pod, wakes that node's waiters of the
domain; a domain or clique appearing or going, or a domain's spec or deletion, wakes all of the
domain's waiters; a change of the Node wakes the label waiters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.informer import FuncHandler, Informer
from computedomain.kube.rest import Api
from computedomain.kube.store import index_by_uid
from computedomain.kubeletplugin.wakeups import (
    NODE_KEY,
    Wakeups,
    changed_entries,
    domain_key,
    domain_node_key,
)

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


def _clique_selector(clique_id: str) -> str | None:
    return f"{names.CLIQUE_LABEL}={clique_id}" if clique_id else None


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def _deleting(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


@attrs.frozen
class WakeHandlers:
    """Informer handlers that turn changes into wake-ups (see the module docstring)."""

    domains: FuncHandler
    cliques: FuncHandler
    pods: FuncHandler
    node: FuncHandler


def wake_handlers(wakeups: Wakeups) -> WakeHandlers:
    """The handlers for the domain, clique, daemon pod and Node informers. Used by the plugin
    and by the hollow nodes' shared informers (whose wake-ups serve every node of a process)."""

    def whole(uid: str) -> None:
        if uid:
            wakeups.notify(domain_key(uid))

    def nodes(uid: str, changed: set[str]) -> None:
        for node in changed:
            wakeups.notify(domain_node_key(uid, node))

    def domain_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        uid = _uid(new)
        if old.get("spec") != new.get("spec") or _deleting(old) != _deleting(new):
            whole(uid)
            return
        nodes(uid, changed_entries(_status(old).get("nodes"), _status(new).get("nodes"), "name"))

    def clique_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        uid = _clique_domain(new)
        if uid:
            nodes(uid, changed_entries(old.get("daemons"), new.get("daemons"), "nodeName"))

    def pod_changed(pod: dict[str, Any]) -> None:
        uid = _label(pod)
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if uid and node:
            wakeups.notify(domain_node_key(uid, node))

    def node_changed(*_: Any) -> None:
        wakeups.notify(NODE_KEY)

    return WakeHandlers(
        domains=FuncHandler(
            add=lambda obj: whole(_uid(obj)),
            update=domain_update,
            delete=lambda obj: whole(_uid(obj)),
        ),
        cliques=FuncHandler(
            add=lambda obj: whole(_clique_domain(obj)),
            update=clique_update,
            delete=lambda obj: whole(_clique_domain(obj)),
        ),
        pods=FuncHandler(
            add=pod_changed, update=lambda _, new: pod_changed(new), delete=pod_changed
        ),
        node=FuncHandler(add=node_changed, update=node_changed, delete=node_changed),
    )


class InformerCluster:
    """ClusterView from informer stores, plus the informers themselves (run them)."""

    def __init__(
        self, api: Api, *, node_name: str, namespace: str, clique_id: str, wakeups: Wakeups
    ) -> None:
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
            api,
            resources.COMPUTE_DOMAIN_CLIQUES,
            namespace=namespace,
            label_selector=_clique_selector(clique_id),
            name="cliques",
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
        handlers = wake_handlers(wakeups)
        self.domains.add_handler(handlers.domains)
        self.cliques.add_handler(handlers.cliques)
        self.pods.add_handler(handlers.pods)
        self.node.add_handler(handlers.node)

    def set_clique(self, clique_id: str) -> None:
        """Watch the cliques of ``clique_id`` from now on (the node moved to another clique):
        the clique informer relists with the new selector."""
        self.cliques.reselect(_clique_selector(clique_id))

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
