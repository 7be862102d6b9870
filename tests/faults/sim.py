"""The whole simulated cluster under faults: what :mod:`tests.faults.test_cluster_faults` runs.

:func:`faulty_sim` starts a :class:`~computedomain_sim.cluster.cluster.SimCluster` in this
process (so the test reaches its kubelets), on either control plane, with the API fault stage
in its server (the embedded one's) and
``tests/faults/overlay`` installed (the sim overlay with a 2 s plugin cleanup). The driver's
components run as real processes in simulated pods: ``cd-controller``, one
``cd-kubelet-plugin`` per node, one ``cd-imex-daemon`` per node and domain, and under each
daemon an ``nvidia-imex`` stand-in. :func:`process_table` finds them in ``/proc`` (the
container's process and its descendants) for the kill and full-disk faults; a reboot goes
through the simulated kubelet (new boot ID, wiped CDI directory, pods restarted).

:class:`Workload` creates, uses and deletes domains the way a user does: a namespace, a
ComputeDomain of ``n`` nodes and a Deployment of ``n`` workers (one per node, each with a
channel claim from the domain's template).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Final

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain.kube.rest import Api
from computedomain_sim.cluster.cluster import ControlPlane, SimCluster
from computedomain_sim.faults.apiserver import ApiFaults
from computedomain_sim.imex import wrappers
from tests.faults import invariants
from tests.support.clusters import running_cluster

OVERLAY: Final = Path(__file__).resolve().parent / "overlay"
AGENTS: Final = "compute-domain-*"  # the user agents of our three programs
PROGRAMS: Final = {
    "controller": ("computedomain-controller", "cd-controller"),
    "plugin": ("computedomain-kubelet-plugin", "cd-kubelet-plugin"),
    "daemon": (names.DAEMON_OBJECT_PREFIX, "cd-imex-daemon"),
}


# --------------------------------------------------------------------------- processes


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


# How many leading arguments name the program: the interpreter's ``bin/`` launcher execs
# ``python [-S] -P -c CODE [CHECKOUT] MODULE LAUNCHER ...``, so the launcher's path is the 6th
# to 8th; the stand-in's wrapper execs ``python -m MODULE``.
PROGRAM_ARGS: Final = 8


def running_program(args: list[str], program: str) -> bool:
    """Whether a command line runs ``program`` (by name, or the stand-in's module for
    ``nvidia-imex``). Pure."""
    module = wrappers.MODULES.get(program)
    return any(
        Path(arg).name == program or (module and arg == module) for arg in args[:PROGRAM_ARGS]
    )


def _running(pid: int, tree: Mapping[int, list[int]], program: str) -> int | None:
    """The first process in ``pid``'s tree (itself included) running ``program``."""
    todo = [pid]
    while todo:
        current = todo.pop(0)
        if running_program(_cmdline(current), program):
            return current
        todo.extend(tree.get(current, []))
    return None


def _container_pid(pod: Mapping[str, Any]) -> int | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        cid = str(status.get("containerID") or "")
        if cid.startswith("sim://") and "running" in (status.get("state") or {}):
            return int(cid.removeprefix("sim://"))
    return None


async def process_table(api: Api) -> dict[str, dict[str, int]]:
    """kind -> name -> pid of the driver's processes alive now: ``controller``,
    ``plugin`` (``<node>``), ``daemon`` and ``imex`` (``<node>/<pod>``)."""
    pods, _ = await api.list_all(resources.PODS, invariants.DRIVER_NAMESPACE)
    tree = await asyncio.to_thread(_children)
    table: dict[str, dict[str, int]] = {kind: {} for kind in (*PROGRAMS, "imex")}
    for pod in pods:
        pid = _container_pid(pod)
        if pid is None:
            continue
        name = str(pod["metadata"]["name"])
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        for kind, (prefix, program) in PROGRAMS.items():
            if not name.startswith(prefix):
                continue
            found = _running(pid, tree, program)
            key = {"controller": "controller", "plugin": node}.get(kind, f"{node}/{name}")
            if found is not None:
                table[kind][key] = found
            if kind == "daemon" and found is not None:
                imex = _running(found, tree, "nvidia-imex")
                if imex is not None and imex != found:
                    table["imex"][key] = imex
    return table


class Processes:
    """A cached :func:`process_table`, refreshed by :meth:`refresh` (the faults read it
    synchronously)."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.table: dict[str, dict[str, int]] = {}

    async def refresh(self) -> None:
        with contextlib.suppress(errors.ApiError):
            self.table = await process_table(self.api)

    def of(self, kind: str) -> dict[str, int]:
        return dict(self.table.get(kind, {}))


# --------------------------------------------------------------------------- the cluster


@contextlib.asynccontextmanager
async def faulty_sim(
    state_dir: Path,
    faults: ApiFaults | None,
    *,
    racks: int,
    nodes_per_rack: int,
    control_plane: str = "embedded",
) -> AsyncIterator[SimCluster]:
    """A simulated cluster on ``control_plane`` (``embedded`` or ``kube``) with ``faults`` in
    its API server (None: none; the embedded server only), components Ready; stopped (every
    process killed) on exit."""
    try:
        async with running_cluster(
            state_dir,
            racks=racks,
            nodes_per_rack=nodes_per_rack,
            components=True,
            within=180,
            manifests=OVERLAY,
            imex_path=str(wrappers.ensure()),
            api_stages=(faults,) if faults is not None else (),
            control_plane=ControlPlane(control_plane),
        ) as cluster:
            yield cluster
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def nodes_of(cluster: SimCluster) -> list[invariants.Node]:
    return [invariants.Node(n, k.ctx.paths.root) for n, k in sorted(cluster.kubelets.items())]


def hosts_reader(cluster: SimCluster) -> invariants.HostsOf:
    """Where a daemon pod's ``/etc/hosts`` is on its node, parsed to name -> IP."""

    def read(pod: Mapping[str, Any]) -> dict[str, str] | None:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        kubelet = cluster.kubelets.get(node)
        if kubelet is None:
            return None
        candidates = [
            kubelet.ctx.paths.pod_dir(str(pod["metadata"]["uid"])) / "etc-hosts",
            kubelet.ctx.paths.host(names.HOSTS_FILE),
        ]
        for path in candidates:
            try:
                text = path.read_text()
            except OSError:
                continue
            mapping = {}
            for line in text.splitlines():
                parts = line.split("#", 1)[0].split()
                if parts and parts[0] == names.HOSTS_SENTINEL_IP:
                    continue  # a slot no live daemon holds
                for host in parts[1:]:
                    mapping[host] = parts[0]
            return mapping
        return None

    return read


# --------------------------------------------------------------------------- the workload


class Workload:
    """Domains as a user makes them: namespace ``fd-<i>``, ComputeDomain ``cd``, Deployment
    ``workers`` with one pod per node (anti-affinity on the host name)."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.live: dict[str, tuple[str, int]] = {}  # namespace -> (domain uid, size)
        self.gone: dict[str, str] = {}  # uid -> namespace/name of deleted domains
        self.created = 0

    async def create(self, size: int) -> str:
        self.created += 1
        ns = f"fd-{self.created}"
        await self.api.create(resources.NAMESPACES, {"metadata": {"name": ns}})
        cd = await self.api.create(
            resources.COMPUTE_DOMAINS,
            {
                "apiVersion": names.GROUP_VERSION,
                "kind": names.COMPUTE_DOMAIN_KIND,
                "metadata": {"name": "cd", "namespace": ns},
                "spec": {
                    "numNodes": size,
                    "channel": {"resourceClaimTemplate": {"name": "cd-channel"}},
                },
            },
            ns,
        )
        labels = {invariants.WORKLOAD_LABEL: "cd"}
        await self.api.create(
            resources.DEPLOYMENTS,
            {
                "metadata": {"name": "workers", "namespace": ns},
                "spec": {
                    "replicas": size,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "affinity": {
                                "podAntiAffinity": {
                                    "requiredDuringSchedulingIgnoredDuringExecution": [
                                        {
                                            "labelSelector": {"matchLabels": labels},
                                            "topologyKey": "kubernetes.io/hostname",
                                        }
                                    ]
                                }
                            },
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "python",
                                    "command": ["python3", "-c", "import time; time.sleep(3600)"],
                                    "resources": {"claims": [{"name": "imex"}]},
                                }
                            ],
                            "resourceClaims": [
                                {"name": "imex", "resourceClaimTemplateName": "cd-channel"}
                            ],
                        },
                    },
                },
            },
            ns,
        )
        self.live[ns] = (str(cd["metadata"]["uid"]), size)
        return ns

    async def running(self, ns: str) -> bool:
        """The domain is Ready and its workers Running (the user's job can start)."""
        cd = await self.api.get(resources.COMPUTE_DOMAINS, "cd", ns)
        if (cd.get("status") or {}).get("status") != "Ready":
            return False
        pods, _ = await self.api.list_all(resources.PODS, ns)
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        return len(running) >= self.live[ns][1]

    async def delete(self, ns: str) -> None:
        """Delete the workers, then the domain (as a user ends a job); returns at once."""
        uid, _ = self.live.pop(ns)
        self.gone[uid] = f"{ns}/cd"
        with contextlib.suppress(errors.NotFound):
            await self.api.delete(resources.DEPLOYMENTS, "workers", ns)
        pods, _ = await self.api.list_all(resources.PODS, ns)
        for pod in pods:
            with contextlib.suppress(errors.NotFound):
                await self.api.delete(resources.PODS, pod["metadata"]["name"], ns)
        with contextlib.suppress(errors.NotFound):
            await self.api.delete(resources.COMPUTE_DOMAINS, "cd", ns)

    def free_nodes(self, total: int) -> int:
        return total - sum(size for _, size in self.live.values())
