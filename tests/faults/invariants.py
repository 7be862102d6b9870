"""The invariants every fault run checks after quiescence, over a whole simulated cluster.

One module for all runs (:mod:`tests.faults.test_cluster_faults`, short and long): each check
reads the cluster as it is — the API through the admin client (the fault stage never touches
it), each node's files through its root directory — and returns the violations it finds as
sentences, never raising, so a run can wait for them to clear (the cluster converges after the
faults stop) and report what is left at the deadline. The checks:

- every live domain is Ready and all its workers Running and Ready;
- ``(clique, index)`` pairs are unique within a domain (status and clique objects agree) and
  every daemon's hosts file maps the names of its clique to the IPs the status gives;
- no claim is both unprepared and injected: on every node, the plugin's completed checkpoint
  entries are exactly the claims of the node's live pods, and the CDI claim specs exactly
  those entries' specs;
- after a domain's deletion nothing of it is left anywhere: objects, the node label, CDI
  files, checkpoint entries, domain directories;
- no component crash-loops: every pod of the driver is Running and Ready, and none restarted
  more often than the faults that struck it explain.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import checkpoint as cp

DRIVER_NAMESPACE: Final = "computedomain-system"
WORKLOAD_LABEL: Final = "faults.computedomain.test/domain"
# Restarts of a driver pod beyond those the injected faults explain that still are not a
# crash loop: a SIGKILL of the controller may cost a daemon one exit, and so on.
RESTART_SLACK: Final = 2

Obj = dict[str, Any]


@attrs.frozen
class Node:
    """Where one node's files are: its root directory (the node's ``/``)."""

    name: str
    root: Path

    def host(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    @property
    def plugin_dir(self) -> Path:
        return self.host(names.PLUGIN_DIR)

    @property
    def cdi_dir(self) -> Path:
        return self.host(names.CDI_DEFAULT_ROOT)

    def checkpoint(self) -> cp.Checkpoint | str:
        """The plugin's checkpoint, or why it cannot be read (a violation)."""
        path = self.plugin_dir / cp.FILE_NAME
        try:
            return cp.decode(path.read_bytes()) if path.exists() else cp.Checkpoint()
        except (OSError, ValueError) as exc:
            return f"{self.name}: checkpoint unreadable: {exc}"

    def claim_specs(self) -> set[str]:
        prefix = f"{names.CDI_VENDOR}-{names.CDI_CLASS_CLAIM}_"
        try:
            found = [p.name for p in self.cdi_dir.iterdir()]
        except FileNotFoundError:
            return set()
        return {n[len(prefix) : -len(".yaml")] for n in found if n.startswith(prefix)}

    def domain_dirs(self) -> set[str]:
        try:
            return {p.name for p in (self.plugin_dir / names.DOMAINS_SUBDIR).iterdir()}
        except FileNotFoundError:
            return set()


@attrs.frozen
class Explained:
    """Restarts the injected faults explain, per driver pod: by node (plugin kills, reboots:
    every pod of the node restarts) and for the controller."""

    plugin_kills: Mapping[str, int] = attrs.field(factory=dict)
    daemon_kills: Mapping[str, int] = attrs.field(factory=dict)
    reboots: Mapping[str, int] = attrs.field(factory=dict)
    controller_kills: int = 0

    def allowed(self, pod: Obj) -> int:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        name = str(pod["metadata"]["name"])
        own = 0
        if name.startswith("computedomain-controller"):
            own = self.controller_kills
        elif name.startswith("computedomain-kubelet-plugin"):
            own = self.plugin_kills.get(node, 0)
        elif name.startswith(names.DAEMON_OBJECT_PREFIX):
            own = self.daemon_kills.get(node, 0)
        return own + self.reboots.get(node, 0) + RESTART_SLACK


def _ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _alive(pod: Obj) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get(
        "phase"
    ) not in ("Succeeded", "Failed")


async def _list(api: Api, resource: Any, namespace: str | None = None) -> list[Obj]:
    items, _ = await api.list_all(resource, namespace)
    return list(items)


def _users(claim: Obj, pods: Sequence[Obj]) -> list[str]:
    uids = {r.get("uid") for r in (claim.get("status") or {}).get("reservedFor") or []}
    return [
        f"{p['metadata']['name']}[{(p.get('status') or {}).get('phase')}]"
        for p in pods
        if p["metadata"]["uid"] in uids
    ]


# --------------------------------------------------------------------------- the checks


async def domains_ready(api: Api) -> list[str]:
    """Every live domain Ready, with all its workers Running and Ready."""
    found = []
    pods = await _list(api, resources.PODS)
    for cd in await _list(api, resources.COMPUTE_DOMAINS):
        meta = cd["metadata"]
        if meta.get("deletionTimestamp"):
            found.append(f"domain {meta['namespace']}/{meta['name']} is still being deleted")
            continue
        ref = f"{meta['namespace']}/{meta['name']}"
        state = (cd.get("status") or {}).get("status")
        if state != "Ready":
            found.append(f"domain {ref} is {state or 'without status'}, not Ready")
        want = int((cd.get("spec") or {}).get("numNodes") or 0)
        workers = [
            p
            for p in pods
            if p["metadata"].get("namespace") == meta["namespace"]
            and (p["metadata"].get("labels") or {}).get(WORKLOAD_LABEL) == meta["name"]
            and _alive(p)
        ]
        ready = [p for p in workers if _ready(p)]
        if len(ready) != want or len(workers) != want:
            phases = sorted(str((p.get("status") or {}).get("phase")) for p in workers)
            found.append(f"domain {ref}: {len(ready)}/{want} workers Running and Ready {phases}")
    return found


def _pairs(entries: Iterable[Mapping[str, Any]]) -> list[tuple[str, int]]:
    return [(str(e.get("cliqueID", "")), int(e.get("index", -1))) for e in entries]


async def unique_indices(api: Api) -> list[str]:
    """``(clique, index)`` unique per domain, in the status and in the clique objects."""
    found = []
    for cd in await _list(api, resources.COMPUTE_DOMAINS):
        ref = f"{cd['metadata']['namespace']}/{cd['metadata']['name']}"
        pairs = _pairs((cd.get("status") or {}).get("nodes") or [])
        if len(set(pairs)) != len(pairs):
            found.append(f"domain {ref}: duplicate (clique, index) in status: {sorted(pairs)}")
    for clique in await _list(api, resources.COMPUTE_DOMAIN_CLIQUES, DRIVER_NAMESPACE):
        daemons = clique.get("daemons") or []
        indices = [int(d.get("index", -1)) for d in daemons]
        if len(set(indices)) != len(indices):
            found.append(f"clique {clique['metadata']['name']}: duplicate index {indices}")
    return found


HostsOf = Callable[[Obj], Mapping[str, str] | None]


async def hosts_files(api: Api, hosts_of: HostsOf, dns_name: Callable[[int], str]) -> list[str]:
    """Every Ready daemon's hosts file maps the names of its clique's members (in the domain's
    status) to their IPs."""
    found = []
    domains = {cd["metadata"]["uid"]: cd for cd in await _list(api, resources.COMPUTE_DOMAINS)}
    for pod in await _list(api, resources.PODS, DRIVER_NAMESPACE):
        if not pod["metadata"]["name"].startswith(names.DAEMON_OBJECT_PREFIX) or not _ready(pod):
            continue
        labels = pod["metadata"].get("labels") or {}
        cd = domains.get(labels.get(names.COMPUTE_DOMAIN_LABEL, ""))
        if cd is None:
            continue
        node = (pod.get("spec") or {}).get("nodeName")
        members = (cd.get("status") or {}).get("nodes") or []
        own = next((m for m in members if m.get("name") == node), None)
        if own is None:
            continue
        wanted = {
            dns_name(int(m["index"])): str(m["ipAddress"])
            for m in members
            if m.get("cliqueID") == own.get("cliqueID")
        }
        have = hosts_of(pod)
        if have is None:
            found.append(f"daemon {pod['metadata']['name']} on {node}: no hosts file")
        elif {k: v for k, v in have.items() if k in wanted or k.startswith("compute-domain")} != (
            wanted
        ):
            found.append(f"daemon {pod['metadata']['name']} on {node}: hosts {have} != {wanted}")
    return found


async def claims_match(api: Api, nodes: Sequence[Node]) -> list[str]:
    """On every node: completed checkpoint entries == claims of the node's live pods; no other
    entry; CDI claim specs == the completed entries that have one."""
    found = []
    pods = await _list(api, resources.PODS)
    claims = {c["metadata"]["uid"]: c for c in await _list(api, resources.RESOURCE_CLAIMS)}
    for node in nodes:
        on_node = {
            p["metadata"]["uid"]
            for p in pods
            if (p.get("spec") or {}).get("nodeName") == node.name and _alive(p)
        }
        used = {
            uid
            for uid, claim in claims.items()
            if any(
                r.get("uid") in on_node
                for r in (claim.get("status") or {}).get("reservedFor") or []
            )
        }
        checkpoint = node.checkpoint()
        if isinstance(checkpoint, str):
            found.append(checkpoint)
            continue
        completed = {uid for uid, _ in checkpoint.completed()}
        if extra := set(checkpoint.claims) - completed:
            found.append(f"{node.name}: entries left PrepareStarted: {sorted(extra)}")
        if extra := completed - used:
            found.append(f"{node.name}: claims unprepared (no live pod) but injected: {extra}")
        if missing := used - completed:
            detail = [
                f"{claims[uid]['metadata']['namespace']}/{claims[uid]['metadata']['name']}"
                f" ({uid}) for {_users(claims[uid], pods)}"
                for uid in sorted(missing)
            ]
            found.append(f"{node.name}: claims of live pods not prepared: {detail}")
        with_spec = {
            uid
            for uid, entry in checkpoint.completed()
            if any(
                f"{names.CDI_CLASS_CLAIM}=" in i for d in entry.devices for i in d.cdi_device_ids
            )
        }
        specs = node.claim_specs()
        if specs != with_spec:
            found.append(
                f"{node.name}: CDI claim specs {sorted(specs)} != prepared {sorted(with_spec)}"
            )
    return found


async def nothing_left(api: Api, nodes: Sequence[Node], gone: Mapping[str, str]) -> list[str]:
    """Nothing left of the deleted domains ``gone`` (uid -> namespace/name): objects, labels,
    CDI files, checkpoint entries, domain directories."""
    if not gone:
        return []
    found = []
    for cd in await _list(api, resources.COMPUTE_DOMAINS):
        if cd["metadata"]["uid"] in gone:
            found.append(f"domain {gone[cd['metadata']['uid']]} still exists")
    for resource in (resources.DAEMON_SETS, resources.RESOURCE_CLAIM_TEMPLATES):
        for obj in await _list(api, resource):
            labels = obj["metadata"].get("labels") or {}
            if labels.get(names.COMPUTE_DOMAIN_LABEL) in gone:
                found.append(f"{resource.plural} {obj['metadata']['name']} left")
    for pod in await _list(api, resources.PODS, DRIVER_NAMESPACE):
        labels = pod["metadata"].get("labels") or {}
        if labels.get(names.COMPUTE_DOMAIN_LABEL) in gone:
            found.append(f"daemon pod {pod['metadata']['name']} left")
    for clique in await _list(api, resources.COMPUTE_DOMAIN_CLIQUES, DRIVER_NAMESPACE):
        if any(uid in clique["metadata"]["name"] for uid in gone):
            found.append(f"clique {clique['metadata']['name']} left")
    for obj in await _list(api, resources.NODES):
        label = (obj["metadata"].get("labels") or {}).get(names.COMPUTE_DOMAIN_LABEL)
        if label in gone:
            found.append(f"node {obj['metadata']['name']} still labelled for {gone[label]}")
    for node in nodes:
        checkpoint = node.checkpoint()
        if isinstance(checkpoint, cp.Checkpoint):
            held = {
                uid
                for uid, entry in checkpoint.claims.items()
                if any(d.domain_id in gone for d in entry.devices)
            }
            if held:
                found.append(f"{node.name}: checkpoint entries of deleted domains {held}")
        if left := node.domain_dirs() & set(gone):
            found.append(f"{node.name}: domain directories of deleted domains {left}")
    return found


async def no_crash_loops(api: Api, explained: Explained) -> list[str]:
    """Every driver pod Running and Ready, restarted no more than the faults explain."""
    found = []
    for pod in await _list(api, resources.PODS, DRIVER_NAMESPACE):
        if not _alive(pod):
            continue
        name = pod["metadata"]["name"]
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        if not _ready(pod):
            waiting = [(s.get("state") or {}).get("waiting", {}).get("reason") for s in statuses]
            found.append(f"driver pod {name} is not Running and Ready ({waiting})")
        restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
        if restarts > explained.allowed(pod):
            last = [json.dumps((s.get("lastState") or {}).get("terminated")) for s in statuses]
            found.append(
                f"driver pod {name} restarted {restarts} times, more than the faults explain "
                f"({explained.allowed(pod)}): last exit {last}"
            )
    return found


async def check(
    api: Api,
    nodes: Sequence[Node],
    *,
    gone: Mapping[str, str],
    explained: Explained,
    hosts_of: HostsOf,
    dns_name: Callable[[int], str],
) -> list[str]:
    """Every invariant; the violations (empty: all hold). Raises only what the API raises
    besides its error statuses."""
    found: list[str] = []
    for step in (
        domains_ready(api),
        unique_indices(api),
        hosts_files(api, hosts_of, dns_name),
        claims_match(api, nodes),
        nothing_left(api, nodes, gone),
        no_crash_loops(api, explained),
    ):
        try:
            found.extend(await step)
        except errors.ApiError as exc:
            found.append(f"the API failed a check: {exc}")
    return found
