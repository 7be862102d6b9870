"""Which objects of a snapshot belong to one ComputeDomain.

The links are the contract's (docs/compatibility.md#names-labels-and-finalizers): the daemon
DaemonSet is
``computedomain-daemon-<uid>`` with label ``resource.nvidia.com/computeDomain=<uid>`` (its pods
carry the label too); cliques are ``<uid>.<cliqueID>``; a channel claim belongs to the domain
whose UID its opaque ``ComputeDomainChannelConfig`` names as ``domainID``; a workload pod is
one that uses such a claim, or the domain's claim template before its claim exists; a node is
the domain's while it carries the domain's label. Pure; called by :mod:`.diagnosis`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from computedomain.api import names
from computedomain.cli.doctor import podstate
from computedomain.cli.doctor.snapshot import (
    Index,
    Obj,
    items,
    labels,
    name,
    namespace,
    ref,
    section,
    slice_clique,
    uid,
)

UNKNOWN_CLIQUE: Final = "?"


@attrs.frozen
class PodClaim:
    """One entry of a pod's ``spec.resourceClaims``, resolved to its ResourceClaim."""

    pod_claim: str  # the name inside the pod
    claim_name: str  # the ResourceClaim's name ("" while a template claim is not generated)
    template: str  # the template it comes from ("" for a named claim)
    claim: Obj | None  # the ResourceClaim, None when missing


@attrs.frozen
class Entry:
    """A daemon's registration: in a clique object, or in the domain's ``status.nodes``."""

    node: str
    clique_id: str
    index: int
    status: str  # "Ready" | "NotReady" | "" (no status counts as ready)
    source: str  # the clique object's name, or "status"


@attrs.frozen
class DomainParts:
    domain: Obj
    uid: str
    ref: str
    template: str
    daemon_set: Obj | None
    daemon_pods: tuple[Obj, ...]
    claims: tuple[Obj, ...]
    workload_pods: tuple[tuple[Obj, tuple[PodClaim, ...]], ...]
    entries: tuple[Entry, ...]
    max_nodes: int
    labelled_nodes: tuple[str, ...]

    def entry_of(self, node: str) -> Entry | None:
        return next((e for e in self.entries if e.node == node), None)

    def daemon_pod_on(self, node: str) -> Obj | None:
        pods = [p for p in self.daemon_pods if podstate.target_node(p) == node]
        return next((p for p in pods if not podstate.terminating(p)), pods[0] if pods else None)

    @property
    def ready(self) -> bool:
        """The domain's own verdict: ``status.status`` Ready and no ``Ready=False``."""
        status = section(self.domain, "status")
        if status.get("status") != "Ready":
            return False
        return all(
            c.get("status") != "False"
            for c in items(status.get("conditions"))
            if c.get("type") == "Ready"
        )


def channel_domain(claim: Obj) -> str | None:
    """The ``domainID`` of a claim's opaque config for our driver, None when it has none."""
    devices = section(section(claim, "spec"), "devices")
    for config in items(devices.get("config")):
        opaque = config.get("opaque")
        if not isinstance(opaque, Mapping) or opaque.get("driver") != names.DRIVER_NAME:
            continue
        params = opaque.get("parameters")
        if isinstance(params, Mapping) and params.get("kind") == names.CHANNEL_CONFIG_KIND:
            return str(params.get("domainID") or "") or None
    return None


def pod_claims(pod: Obj, index: Index) -> tuple[PodClaim, ...]:
    """Every claim of ``pod``, resolved through ``status.resourceClaimStatuses``."""
    generated = {
        str(s.get("name")): str(s.get("resourceClaimName") or "")
        for s in items(section(pod, "status").get("resourceClaimStatuses"))
    }
    out = []
    for entry in items(section(pod, "spec").get("resourceClaims")):
        pod_claim = str(entry.get("name") or "")
        template = str(entry.get("resourceClaimTemplateName") or "")
        claim_name = str(entry.get("resourceClaimName") or "") or generated.get(pod_claim, "")
        claim = index.claim_by_ref.get((namespace(pod), claim_name)) if claim_name else None
        out.append(PodClaim(pod_claim, claim_name, template, claim))
    return tuple(out)


def _max_nodes(daemon_set: Obj | None) -> int:
    template = section(section(daemon_set, "spec"), "template")
    for container in items(section(template, "spec").get("containers")):
        for env in items(container.get("env")):
            if env.get("name") == names.ENV_MAX_NODES_PER_IMEX_DOMAIN:
                try:
                    return int(str(env.get("value")))
                except ValueError:
                    break
    return names.DEFAULT_MAX_NODES_PER_IMEX_DOMAIN


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def _entries(domain: Obj, cliques: Sequence[Obj]) -> tuple[Entry, ...]:
    found: dict[str, Entry] = {}
    for clique in sorted(cliques, key=name):
        for daemon in items(clique.get("daemons")):
            node = str(daemon.get("nodeName") or "")
            if node:
                found.setdefault(
                    node,
                    Entry(
                        node,
                        str(daemon.get("cliqueID") or ""),
                        _int(daemon.get("index")),
                        str(daemon.get("status") or ""),
                        name(clique),
                    ),
                )
    for node_entry in items(section(domain, "status").get("nodes")):
        node = str(node_entry.get("name") or "")
        if node:
            found.setdefault(
                node,
                Entry(
                    node,
                    str(node_entry.get("cliqueID") or ""),
                    _int(node_entry.get("index")),
                    str(node_entry.get("status") or ""),
                    "status",
                ),
            )
    return tuple(found.values())


def _uses_domain(pod_claim_list: Sequence[PodClaim], domain_uid: str, template: str) -> bool:
    for pc in pod_claim_list:
        if pc.claim is not None and channel_domain(pc.claim) == domain_uid:
            return True
        if pc.claim is None and template and pc.template == template:
            return True
    return False


def parts_of(domain: Obj, index: Index) -> DomainParts:
    """The objects of ``domain`` in the index's snapshot. Pure."""
    snapshot = index.snapshot
    domain_uid = uid(domain)
    channel = section(section(domain, "spec"), "channel")
    template = str(section(channel, "resourceClaimTemplate").get("name") or "")
    daemon_name = names.daemon_object_name(domain_uid)
    daemon_set = next(
        (
            ds
            for ds in snapshot.daemon_sets
            if name(ds) == daemon_name
            and labels(ds).get(names.COMPUTE_DOMAIN_LABEL, domain_uid) == domain_uid
        ),
        None,
    )
    daemon_pods = tuple(
        p
        for p in snapshot.daemon_pods
        if labels(p).get(names.COMPUTE_DOMAIN_LABEL) == domain_uid and not podstate.finished(p)
    )
    claims = tuple(
        c
        for c in snapshot.claims
        if namespace(c) == namespace(domain) and channel_domain(c) == domain_uid
    )
    daemon_uids = {uid(p) for p in snapshot.daemon_pods}
    workload = []
    for pod in sorted(snapshot.workload_pods, key=ref):
        if namespace(pod) != namespace(domain) or uid(pod) in daemon_uids:
            continue
        if podstate.finished(pod):
            continue
        resolved = pod_claims(pod, index)
        if _uses_domain(resolved, domain_uid, template):
            workload.append((pod, resolved))
    prefix = f"{domain_uid}."
    cliques = [c for c in snapshot.cliques if name(c).startswith(prefix)]
    labelled = tuple(
        sorted(
            name(n)
            for n in snapshot.nodes
            if labels(n).get(names.COMPUTE_DOMAIN_LABEL) == domain_uid
        )
    )
    return DomainParts(
        domain=domain,
        uid=domain_uid,
        ref=ref(domain),
        template=template,
        daemon_set=daemon_set,
        daemon_pods=daemon_pods,
        claims=claims,
        workload_pods=tuple(workload),
        entries=_entries(domain, cliques),
        max_nodes=_max_nodes(daemon_set),
        labelled_nodes=labelled,
    )


def pod_clique(pod: Obj, index: Index) -> str:
    """The clique of a daemon pod: its clique label, else the node's slice attribute, else
    :data:`UNKNOWN_CLIQUE`."""
    pod_labels = labels(pod)
    if names.CLIQUE_LABEL in pod_labels:
        return str(pod_labels[names.CLIQUE_LABEL])
    for item in index.slices_by_node.get(podstate.node_of(pod), []):
        found = slice_clique(item)
        if found:
            return found
    return UNKNOWN_CLIQUE
