"""Reusable parts of the simulation scenarios: a module-scoped cluster, the objects a scenario
creates (namespace, ComputeDomain, workers bound to the domain's channel template), waits with
deadlines whose failure message says what the cluster looks like (the doctor's findings), the
workers' own reports, and what a node keeps on disk (CDI specs, checkpoint entries, domain dirs).

Used by the scenario modules in ``tests/e2e``; talks to the cluster with the official client
(:func:`computedomain.kube.client.connect`, :class:`computedomain.kube.rest.Api`), starts and
stops it with ``computedomain sim up/down``. Workers are pods running :data:`WORKER_SCRIPT`,
which prints one JSON line and sleeps: ``channels`` (the names under its
``/dev/nvidia-caps-imex-channels``, None when absent), ``channel0`` (that device node's content:
the simulation's placeholder record, JSON) and ``env`` (its environment).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import pytest

from computedomain.api import names
from computedomain.cli.doctor import command, gathering, report
from computedomain.kube import errors, resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import checkpoint as plugin_checkpoint
from computedomain_sim.cluster.layout import StateLayout
from tests.support import polling

from .conftest import run_cli

__all__ = [
    "DEADLINE",
    "DRIVER_NAMESPACE",
    "WORKER_SCRIPT",
    "Cluster",
    "Leftovers",
    "api_of",
    "cliques",
    "create_domain",
    "create_namespace",
    "create_worker",
    "create_worker_deployment",
    "daemon_hosts",
    "daemon_pods",
    "delete_now",
    "doctor_text",
    "domain_ready",
    "events_about",
    "eventually",
    "formed",
    "gone",
    "hosts_consistent",
    "membership",
    "module_cluster",
    "pod_log",
    "pods_running",
    "worker_report",
]

T = TypeVar("T")
Obj = dict[str, Any]

DEADLINE = 90.0  # generous: the machine running the suite is small and shared
DRIVER_NAMESPACE = "computedomain-system"
HOSTNAME_LABEL = "kubernetes.io/hostname"

WORKER_SCRIPT = """\
import json, os, time
d = os.path.join(os.environ.get("CD_SIM_DEV_DIR", "/dev"), "nvidia-caps-imex-channels")
try:
    channels = sorted(os.listdir(d))
except OSError:
    channels = None
try:
    with open(os.path.join(d, "channel0")) as f:
        channel0 = f.read()
except OSError:
    channel0 = None
report = {"channels": channels, "channel0": channel0, "env": dict(os.environ)}
print(json.dumps(report), flush=True)
time.sleep(100000)
"""


@attrs.frozen
class Leftovers:
    """What one node still holds for claims and domains: per-claim CDI spec files, claim UIDs in
    the plugin's checkpoint, and domain directories."""

    cdi_files: tuple[str, ...]
    checkpoint_claims: tuple[str, ...]
    domain_dirs: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not (self.cdi_files or self.checkpoint_claims or self.domain_dirs)


@attrs.frozen
class Cluster:
    """A cluster started with ``sim up`` for one test module."""

    state_dir: Path
    kubeconfig: Path
    nodes: tuple[str, ...]

    @property
    def layout(self) -> StateLayout:
        return StateLayout(self.state_dir)

    @property
    def config(self) -> ClientConfig:
        # A long request timeout: on a loaded machine the simulation may stall for a while.
        return ClientConfig(kubeconfig=str(self.kubeconfig), timeout_seconds=60.0, qps=50.0)

    def node_root(self, node: str) -> Path:
        """The directory standing for ``node``'s ``/``."""
        return self.layout.nodes_dir / node

    def plugin_dir(self, node: str) -> Path:
        return self.node_root(node) / names.KUBELET_PLUGINS_DIR.lstrip("/") / names.DRIVER_NAME

    def leftovers(self, node: str) -> Leftovers:
        """Per-claim CDI specs, checkpointed claims and domain dirs on ``node`` (any domain)."""
        cdi_root = self.node_root(node) / "var/run/cdi"
        claim_prefix = f"{names.CDI_VENDOR}-{names.CDI_CLASS_CLAIM}_"
        cdi_files = sorted(p.name for p in cdi_root.glob("*") if p.name.startswith(claim_prefix))
        path = self.plugin_dir(node) / plugin_checkpoint.FILE_NAME
        claims = list(json.loads(path.read_bytes())["claims"]) if path.is_file() else []
        domains = self.plugin_dir(node) / names.DOMAINS_SUBDIR
        domain_dirs = sorted(p.name for p in domains.iterdir()) if domains.is_dir() else []
        return Leftovers(tuple(cdi_files), tuple(sorted(claims)), tuple(domain_dirs))


@contextlib.contextmanager
def module_cluster(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    *,
    racks: int = 2,
    nodes_per_rack: int = 2,
    extra_args: Sequence[str] = (),
    control_plane: str = "embedded",
) -> Iterator[Cluster]:
    """``sim up`` a cluster of ``racks`` x ``nodes_per_rack`` nodes (named ``r<i>n<j>``) on
    ``control_plane``, yield it, ``sim down`` after. Fails the test with ``sim up``'s stderr if
    it does not start."""
    state = tmp_path_factory.mktemp(name) / "sim"
    result = run_cli(
        "up", f"--state-dir={state}", f"--racks={racks}", f"--nodes-per-rack={nodes_per_rack}",
        "--timeout=150", f"--control-plane={control_plane}", *extra_args,
        check=False, timeout=200,
    )  # fmt: skip
    nodes = tuple(f"r{r}n{n}" for r in range(racks) for n in range(nodes_per_rack))
    try:
        assert result.returncode == 0, result.stderr
        assert (
            json.loads(StateLayout(state).state_file.read_text())["controlPlane"] == control_plane
        )
        yield Cluster(state, Path(result.stdout.strip().splitlines()[-1]), nodes)
    finally:
        run_cli("down", f"--state-dir={state}", check=False)


@contextlib.asynccontextmanager
async def api_of(cluster: Cluster) -> AsyncIterator[Api]:
    """An admin client of the cluster, closed after."""
    client = await connect(cluster.config)
    try:
        yield client
    finally:
        await client.close()


async def create_namespace(api: Api, name: str) -> str:
    await api.create(resources.NAMESPACES, {"metadata": {"name": name}})
    return name


async def create_domain(
    api: Api,
    ns: str,
    name: str,
    *,
    num_nodes: int | None = None,
    allocation_mode: str | None = None,
) -> Obj:
    """A ComputeDomain whose channel template is ``<name>-channel``."""
    channel: Obj = {"resourceClaimTemplate": {"name": f"{name}-channel"}}
    if allocation_mode is not None:
        channel["allocationMode"] = allocation_mode
    spec: Obj = {"channel": channel}
    if num_nodes is not None:
        spec["numNodes"] = num_nodes
    body = {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.COMPUTE_DOMAIN_KIND,
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }
    return await api.create(resources.COMPUTE_DOMAINS, body, ns)


def _pod_spec(domain: str, node_selector: Mapping[str, str] | None) -> Obj:
    spec: Obj = {
        "terminationGracePeriodSeconds": 5,
        "containers": [
            {
                "name": "main",
                "image": "python",
                "command": ["python3", "-c", WORKER_SCRIPT],
                "resources": {"claims": [{"name": "imex"}]},
            }
        ],
        "resourceClaims": [{"name": "imex", "resourceClaimTemplateName": f"{domain}-channel"}],
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    return spec


async def create_worker(api: Api, ns: str, domain: str, node: str, *, name: str) -> Obj:
    """A worker pod of ``domain`` on ``node`` (by hostname), with a channel claim."""
    body = {
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
        "spec": _pod_spec(domain, {HOSTNAME_LABEL: node}),
    }
    return await api.create(resources.PODS, body, ns)


async def create_worker_deployment(
    api: Api,
    ns: str,
    domain: str,
    *,
    name: str,
    replicas: int,
    nodes: Sequence[str] = (),
) -> Obj:
    """A Deployment of ``replicas`` workers of ``domain``, one per node (pod anti-affinity on
    hostname), restricted to ``nodes`` when given. Its pods carry the label ``app=<name>``."""
    spec = _pod_spec(domain, None)
    affinity: Obj = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": HOSTNAME_LABEL}
            ]
        }
    }
    if nodes:
        term = {
            "matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": list(nodes)}]
        }
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    spec["affinity"] = affinity
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }
    return await api.create(resources.DEPLOYMENTS, body, ns)


async def doctor_text(cluster: Cluster, ns: str, domain: str | None = None) -> str:
    """The doctor's text report for the namespace (or one domain), or why it could not run."""
    try:
        reports = await command.diagnose_cluster(cluster.config, gathering.Scope(ns, domain))
    except Exception as exc:  # a failure message must never raise
        return f"(doctor failed: {exc!r})"
    return report.render_text(reports)


async def eventually(
    check: Callable[[], Awaitable[T | None]],
    *,
    what: str,
    within: float = DEADLINE,
    every: float = 0.5,
    explain: Callable[[], Awaitable[str]] | None = None,
) -> T:
    """:func:`tests.support.polling.eventually` at the e2e pace: a cluster of processes on a
    small shared machine, probed (the API read, the doctor run) every half second."""
    return await polling.eventually(check, what=what, within=within, every=every, explain=explain)


async def domain_ready(
    api: Api, cluster: Cluster, ns: str, name: str, *, within: float = DEADLINE
) -> Obj:
    """Wait until the ComputeDomain's ``status.status`` is Ready; return it. On timeout the
    failure message is the doctor's report."""

    async def probe() -> Obj | None:
        domain = await api.get(resources.COMPUTE_DOMAINS, name, ns)
        return domain if (domain.get("status") or {}).get("status") == "Ready" else None

    return await eventually(
        probe,
        what=f"ComputeDomain {ns}/{name} Ready",
        within=within,
        explain=lambda: doctor_text(cluster, ns, name),
    )


async def pods_running(
    api: Api,
    cluster: Cluster,
    ns: str,
    *,
    selector: str,
    count: int,
    within: float = DEADLINE,
    domain: str | None = None,
) -> list[Obj]:
    """Wait until exactly ``count`` pods matching ``selector`` exist, all Running, none being
    deleted; return them sorted by node. On timeout: the pods' phases and the doctor's report."""

    async def listed() -> list[Obj]:
        items, _ = await api.list_all(resources.PODS, ns, label_selector=selector)
        return items

    async def probe() -> list[Obj] | None:
        items = await listed()
        live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
        if len(live) == len(items) == count and all(
            p["status"].get("phase") == "Running" for p in live
        ):
            return sorted(live, key=lambda p: p["spec"].get("nodeName", ""))
        return None

    async def explain() -> str:
        lines = [
            f"{p['metadata']['name']} on {p['spec'].get('nodeName')}: "
            f"{p['status'].get('phase')} deleting={bool(p['metadata'].get('deletionTimestamp'))}"
            for p in await listed()
        ]
        return "\n".join(lines) + "\n" + await doctor_text(cluster, ns, domain)

    return await eventually(
        probe,
        what=f"{count} pods {selector} Running in {ns}",
        within=within,
        explain=explain,
    )


async def gone(
    api: Api, resource: resources.Resource, name: str, ns: str | None, *, within: float = DEADLINE
) -> None:
    """Wait until the object no longer exists."""

    async def probe() -> bool:
        try:
            await api.get(resource, name, ns)
        except errors.NotFound:
            return True
        return False

    await eventually(probe, what=f"{resource.kind} {ns}/{name} gone", within=within)


async def delete_now(api: Api, resource: resources.Resource, name: str, ns: str | None) -> None:
    """Delete with ``gracePeriodSeconds=0`` (kubectl's ``--force --grace-period=0``); absent is
    fine."""
    with contextlib.suppress(errors.NotFound):
        await api.delete(resource, name, ns, grace_period_seconds=0)


def pod_log(cluster: Cluster, pod: Obj, container: str = "main") -> str:
    """The container's current log (``0.log``) on the pod's node; empty when none yet."""
    meta = pod["metadata"]
    directory = "_".join((meta["namespace"], meta["name"], meta["uid"]))
    path = (
        cluster.node_root(pod["spec"]["nodeName"])
        / "var/log/pods"
        / directory
        / container
        / "0.log"
    )
    return path.read_text(errors="replace") if path.is_file() else ""


def worker_report(cluster: Cluster, pod: Obj) -> Obj | None:
    """The JSON line a worker printed (``channels``, ``env``), or None before it printed."""
    for line in pod_log(cluster, pod).splitlines():
        start = line.find('{"channels"')
        if start >= 0:
            parsed: Obj = json.loads(line[start:])
            return parsed
    return None


async def daemon_pods(api: Api, domain_uid: str) -> list[Obj]:
    """The domain's IMEX daemon pods (label ``resource.nvidia.com/computeDomain=<uid>``)."""
    items, _ = await api.list_all(
        resources.PODS,
        DRIVER_NAMESPACE,
        label_selector=f"{names.COMPUTE_DOMAIN_LABEL}={domain_uid}",
    )
    return items


def daemon_hosts(cluster: Cluster, pod: Obj) -> dict[str, str]:
    """The IMEX-daemon DNS names → IPs in a daemon pod's hosts file (``compute-domain-daemon-*``
    lines only, slots mapped to the sentinel address left out)."""
    path = (
        cluster.node_root(pod["spec"]["nodeName"])
        / "var/lib/kubelet/pods"
        / pod["metadata"]["uid"]
        / "etc-hosts"
    )
    mapping: dict[str, str] = {}
    text = path.read_text() if path.is_file() else ""
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words and words[0] == names.HOSTS_SENTINEL_IP:
            continue
        for host in words[1:]:
            if host.startswith("compute-domain-daemon-"):
                mapping[host] = words[0]
    return mapping


async def cliques(api: Api, domain_uid: str) -> list[Obj]:
    """The domain's ComputeDomainCliques (in the driver namespace, labelled with its UID)."""
    items, _ = await api.list_all(
        resources.COMPUTE_DOMAIN_CLIQUES,
        DRIVER_NAMESPACE,
        label_selector=f"{names.COMPUTE_DOMAIN_LABEL}={domain_uid}",
    )
    return items


async def events_about(api: Api, ns: str, kind: str, name: str) -> list[Obj]:
    """Events in ``ns`` whose involvedObject is ``kind``/``name``."""
    items, _ = await api.list_all(resources.EVENTS, ns)
    return [
        e
        for e in items
        if (e.get("involvedObject") or {}).get("kind") == kind
        and (e.get("involvedObject") or {}).get("name") == name
    ]


def ready_condition(domain: dict[str, object]) -> dict[str, str]:
    """The domain's ``Ready`` condition ({} when it has none)."""
    status = domain.get("status") or {}
    assert isinstance(status, dict)
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Ready":
            return dict(condition)
    return {}


def membership(domain: Obj) -> dict[str, tuple[str, int, str]]:
    """node -> (cliqueID, index, IP), from the domain's ``status.nodes``. Pure."""
    return {
        n["name"]: (n["cliqueID"], n["index"], n["ipAddress"])
        for n in (domain.get("status") or {}).get("nodes") or []
    }


async def formed(
    api: Api, cluster: Cluster, ns: str, name: str, nodes: set[str], *, within: float = DEADLINE
) -> Obj:
    """Wait until the domain is Ready with exactly ``nodes``, each entry Ready and naming the
    daemon pod that now runs on its node (so a replaced daemon has re-registered); return it."""

    async def probe() -> Obj | None:
        domain = await api.get(resources.COMPUTE_DOMAINS, name, ns)
        status = domain.get("status") or {}
        entries = status.get("nodes") or []
        if status.get("status") != "Ready" or {e["name"] for e in entries} != nodes:
            return None
        pods = {
            p["spec"].get("nodeName"): p["metadata"]["uid"]
            for p in await daemon_pods(api, domain["metadata"]["uid"])
            if not p["metadata"].get("deletionTimestamp")
        }
        if all(e.get("status") == "Ready" and pods.get(e["name"]) == e["podUID"] for e in entries):
            return domain
        return None

    return await eventually(
        probe,
        what=f"ComputeDomain {ns}/{name} formed on {sorted(nodes)}",
        within=within,
        explain=lambda: doctor_text(cluster, ns, name),
    )


async def hosts_consistent(
    api: Api, cluster: Cluster, domain: Obj, *, within: float = DEADLINE
) -> None:
    """Wait until every daemon's hosts file maps exactly its clique's DNS names to its clique's
    IPs (``compute-domain-daemon-<index>`` -> IP of the member with that index), per
    :func:`membership` of ``domain``."""
    members = membership(domain)
    expected: dict[str, dict[str, str]] = {}
    for clique, index, ip in members.values():
        expected.setdefault(clique, {})[f"compute-domain-daemon-{index:04d}"] = ip

    async def seen() -> dict[str, dict[str, str]]:
        pods = await daemon_pods(api, domain["metadata"]["uid"])
        return {
            p["spec"]["nodeName"]: daemon_hosts(cluster, p)
            for p in pods
            if not p["metadata"].get("deletionTimestamp")
        }

    async def probe() -> bool:
        hosts = await seen()
        return hosts.keys() == members.keys() and all(
            hosts[node] == expected[clique] for node, (clique, _, _) in members.items()
        )

    async def explain() -> str:
        return f"expected per clique {expected}, seen per node {await seen()}"

    await eventually(probe, what="daemon hosts files consistent", within=within, explain=explain)


def child_processes() -> set[int]:
    """PIDs of the processes whose parent is this test process: a benchmark or program run as
    a child must leave none behind."""
    mine = str(os.getpid())
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as stat:
                    if stat.read().rpartition(")")[2].split()[1] == mine:
                        found.add(int(entry.name))
            except OSError:
                continue
    return found
