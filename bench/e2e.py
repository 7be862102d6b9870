"""End-to-end timings of a ComputeDomain on the simulated cluster (issue 6).

For each size ``RxN`` (R racks of N nodes) of ``--sizes`` (default ``2x4,2x18,4x18``) it brings
up a simulated cluster with the driver installed (``deployments/overlays/sim``: the real
controller, one real ``cd-kubelet-plugin`` process per node, real ``cd-imex-daemon`` pods),
waits for the components, then creates a ComputeDomain (``numNodes`` = all nodes) and its job
(a Deployment of one worker per node, spanning all racks, each holding a channel claim from the
domain's template) and times how long until every worker is Running and the domain Ready. It
reports

- ``cluster_up_s`` / ``components_ready_s``: the cluster's start, then the controller and the
  plugins Ready; ``domain_ready_s``, ``workers_running_s`` and ``all_s`` (the later of the two)
  from the creation of the domain, with the moments workers were scheduled and daemons Running;
- ``api_requests``: requests the API server served between the domain's creation and
  readiness, by authenticated user (each component has its own ServiceAccount), with verbs,
  user agents and the 409/429 answers (:mod:`computedomain_sim.apiserver.accounting`);
  ``api_requests_setup`` the same from the cluster's start to the components Ready;
- ``peak_rss_mib``: peak resident memory (``VmHWM``) of the sim process (API server, scheduler,
  controllers, kubelets, and this benchmark's client), the controller, the plugins and the IMEX
  daemons (max and sum; with their ``nvidia-imex`` stand-ins apart), workers excluded;
- ``cluster_down_s``: the time to tear everything down.

``--control-plane embedded,kube`` measures the same sizes on each control plane named, one
after the other: the embedded one (the default) and Kubernetes' own (``make kube-bins``). There
``api_requests`` comes from kube-apiserver's audit log, which records the service accounts'
requests only (the components'; not the admin's, the benchmark's or the kubelets'), and
``peak_rss_mib``/``cpu_s`` include etcd and the three Kubernetes programs.

Each size runs in a child process of its own (``--one RxN``), so the sim process's peak memory
is its own. Prints exactly one JSON document, the sizes under the control plane that ran them
(``{"benchmark": "e2e", "control_planes": {"embedded": {"sizes": [...]}, ...}}``). Run:
``python bench/e2e.py [--sizes 2x4,2x18] [--control-plane embedded,kube]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import attrs

from computedomain.api import names
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.informer import FuncHandler, Informer
from computedomain.kube.resources import COMPUTE_DOMAINS, DEPLOYMENTS, NAMESPACES, PODS
from computedomain.kube.rest import Api
from computedomain_sim.apiserver.accounting import COUNTED_STATUSES, RequestAccounting
from computedomain_sim.cluster.cluster import (
    DEFAULT_MANIFESTS,
    ClusterConfig,
    ControlPlane,
    SimCluster,
)
from computedomain_sim.cluster.topology import Topology
from computedomain_sim.controlplane import audit
from computedomain_sim.imex import wrappers

DEFAULT_SIZES = "2x4,2x18,4x18"
NAMESPACE = "bench"
DOMAIN = "bench"
# Command-line markers of the component processes, in the order they are tried.
COMPONENTS = (
    ("controller", "cd-controller"),
    ("plugin", "cd-kubelet-plugin"),
    ("daemon", "cd-imex-daemon"),
    ("imex", "computedomain_sim.imex.daemon"),  # the nvidia-imex stand-in
)
# The real control plane's programs, by the name they run under (``--control-plane kube``).
CONTROL_PLANE_PROGRAMS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
TICKS = os.sysconf("SC_CLK_TCK")


def parse_control_planes(text: str) -> list[ControlPlane]:
    """``"embedded,kube"`` -> the control planes, in order, each once; raises ValueError
    naming the flag and the unknown name."""
    planes: list[ControlPlane] = []
    for name in (n.strip() for n in text.split(",")):
        try:
            plane = ControlPlane(name)
        except ValueError:
            known = ", ".join(c.value for c in ControlPlane)
            msg = f"--control-plane: {name!r} is not a control plane ({known})"
            raise ValueError(msg) from None
        if plane not in planes:
            planes.append(plane)
    return planes


def parse_size(text: str) -> tuple[int, int]:
    """``"2x18"`` -> ``(2, 18)``; raises ValueError naming the size."""
    racks, sep, per_rack = text.strip().partition("x")
    if not sep or not racks.isdigit() or not per_rack.isdigit():
        msg = f"size {text!r} is not RACKSxNODES (e.g. 2x18)"
        raise ValueError(msg)
    return int(racks), int(per_rack)


def domain_body(nodes: int) -> dict[str, Any]:
    return {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.COMPUTE_DOMAIN_KIND,
        "metadata": {"name": DOMAIN, "namespace": NAMESPACE},
        "spec": {
            "numNodes": nodes,
            "channel": {"resourceClaimTemplate": {"name": f"{DOMAIN}-channel"}},
        },
    }


def job_body(nodes: int) -> dict[str, Any]:
    """One worker per node (hostname anti-affinity), each with a channel claim."""
    labels = {"app": "bench-worker"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "workers", "namespace": NAMESPACE},
        "spec": {
            "replicas": nodes,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
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
                            "command": ["sleep", "600"],
                            "resources": {"claims": [{"name": "imex"}]},
                        }
                    ],
                    "resourceClaims": [
                        {"name": "imex", "resourceClaimTemplateName": f"{DOMAIN}-channel"}
                    ],
                },
            },
        },
    }


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _ready(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


async def watch_job(
    api: Api, nodes: int, started: float, within: float, seen: dict[str, float]
) -> None:
    """Follow pods and the domain through informers (a watch each, not polling: at 2x18 a
    0.2 s poll of every pod cost the API server about a CPU-second) until every worker is
    Running and the domain Ready, recording in ``seen`` the moment (seconds after
    ``started``) each milestone was first seen. Raises TimeoutError saying what is missing
    (``seen`` then holds the milestones reached)."""
    workers = Informer(api, PODS, namespace=NAMESPACE, name="bench-workers")
    daemons = Informer(api, PODS, label_selector=names.COMPUTE_DOMAIN_LABEL, name="bench-daemons")
    domains = Informer(api, COMPUTE_DOMAINS, namespace=NAMESPACE, name="bench-domains")
    changed = asyncio.Event()
    for informer in (workers, daemons, domains):
        informer.add_handler(
            FuncHandler(
                add=lambda _o: changed.set(),
                update=lambda _o, _n: changed.set(),
                delete=lambda _o: changed.set(),
            )
        )
    tasks = [asyncio.create_task(i.run()) for i in (workers, daemons, domains)]
    state = "nothing yet"
    try:
        async with asyncio.timeout(within):
            while True:
                await changed.wait()
                changed.clear()
                now = round(time.perf_counter() - started, 3)
                pods = workers.store.list()
                scheduled = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
                running = sum(1 for p in pods if _phase(p) == "Running")
                daemon_pods = daemons.store.list()
                daemons_running = sum(1 for p in daemon_pods if _phase(p) == "Running")
                daemons_ready = sum(1 for p in daemon_pods if _ready(p))
                domain = domains.store.get(f"{NAMESPACE}/{DOMAIN}") or {}
                ready = (domain.get("status") or {}).get("status") == "Ready"
                marks = {
                    "workers_scheduled_s": scheduled >= nodes,
                    "daemons_running_s": daemons_running >= nodes,
                    "daemons_ready_s": daemons_ready >= nodes,
                    "workers_running_s": running >= nodes,
                    "domain_ready_s": ready,
                }
                for mark, reached in marks.items():
                    if reached:
                        seen.setdefault(mark, now)
                state = (
                    f"{scheduled}/{nodes} workers scheduled, {running} Running, "
                    f"{daemons_running} daemons Running, domain ready: {ready}"
                )
                if ready and running >= nodes:
                    seen["all_s"] = now
                    return
    except TimeoutError:
        msg = f"not done after {within:g}s: {state}"
        raise TimeoutError(msg) from None
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = defaultdict(list)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                ppid = int(stat.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree[ppid].append(int(entry.name))
    return tree


def _peak_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def _kind(pid: int) -> str | None:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    # The program's name is the interpreter's script or module, or (through a bin/ launcher)
    # the launcher's path a few arguments further on (after the checkout's path for
    # cd-imex-daemon in a checkout).
    program = Path(argv[0].decode(errors="replace")).name
    if program in CONTROL_PLANE_PROGRAMS:
        return program
    words = " ".join(Path(a.decode(errors="replace")).name for a in argv[:9])
    if b"check" in argv:
        return None  # an exec probe (cd-imex-daemon check), counted with the exited children
    return next((k for k, marker in COMPONENTS if marker in words), None)


@attrs.frozen
class Sample:
    """The component processes below this one at one moment: kind, peak RSS, CPU seconds."""

    procs: dict[int, tuple[str, int, float]]  # pid -> (kind, VmHWM KiB, CPU s)
    self_cpu_s: float  # this (the sim) process
    children_cpu_s: float  # exited children: probes, execs, finished containers

    @classmethod
    def take(cls) -> Sample:
        """Read /proc; processes that go away meanwhile are skipped."""
        tree = _children()
        procs: dict[int, tuple[str, int, float]] = {}
        stack = list(tree[os.getpid()])
        while stack:
            pid = stack.pop()
            stack.extend(tree.get(pid, ()))
            try:
                kind = _kind(pid)
                if kind is not None:
                    procs[pid] = (kind, _peak_kib(pid), _cpu_s(pid))
            except (OSError, ValueError, IndexError):
                continue
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return cls(procs, own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime)

    def memory(self) -> dict[str, dict[str, float]]:
        """Peak RSS (MiB) by component: ``{kind: {"count", "max", "sum"}}``, with ``sim``."""
        peaks: dict[str, list[int]] = defaultdict(list)
        for kind, peak, _ in self.procs.values():
            peaks[kind].append(peak)
        peaks["sim"] = [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss]
        return {
            kind: {
                "count": len(values),
                "max": round(max(values) / 1024, 1),
                "sum": round(sum(values) / 1024, 1),
            }
            for kind, values in sorted(peaks.items())
        }

    def cpu_since(self, before: Sample) -> dict[str, float]:
        """CPU seconds spent since ``before``, by component, the sim process and the exited
        children (probe commands above all)."""
        spent: dict[str, float] = defaultdict(float)
        for pid, (kind, _, cpu) in self.procs.items():
            earlier = before.procs.get(pid)
            spent[kind] += cpu - (earlier[2] if earlier is not None else 0.0)
        spent["sim"] = self.self_cpu_s - before.self_cpu_s
        spent["exited_children"] = self.children_cpu_s - before.children_cpu_s
        return {kind: round(value, 2) for kind, value in sorted(spent.items())}


class AuditAccounting:
    """What :class:`RequestAccounting` counts, from kube-apiserver's audit log (its service
    accounts' requests only): the requests logged since the last :meth:`reset`."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self._offset = 0

    def _requests(self) -> list[audit.AuditedRequest]:
        return list(audit.read(self.log, self._offset))

    def reset(self) -> None:
        self._offset = self.log.stat().st_size if self.log.exists() else 0

    def total(self) -> int:
        return len(self._requests())

    def snapshot(self) -> dict[str, Any]:
        """The shape of :meth:`RequestAccounting.snapshot`, users sorted."""
        out: dict[str, dict[str, Any]] = {}
        for request in sorted(self._requests(), key=lambda r: r.user):
            entry = out.setdefault(
                request.user,
                {"total": 0, "verbs": {}, "agents": {}, **{str(c): 0 for c in COUNTED_STATUSES}},
            )
            entry["total"] += 1
            entry["verbs"][request.verb] = entry["verbs"].get(request.verb, 0) + 1
            agent = request.user_agent.split("/", 1)[0].strip() or "(none)"
            entry["agents"][agent] = entry["agents"].get(agent, 0) + 1
            if request.code in COUNTED_STATUSES:
                entry[str(request.code)] += 1
        return out


async def measure(
    racks: int,
    per_rack: int,
    within: float,
    keep: Path | None = None,
    control_plane: ControlPlane = ControlPlane.EMBEDDED,
) -> dict[str, Any]:
    """One size on ``control_plane``, in this process. Tears everything down, also on
    failure; the state directory (logs) is removed unless ``keep`` names where to put it."""
    nodes = racks * per_rack
    with tempfile.TemporaryDirectory(prefix="cd-bench-") as scratch:
        state = str(keep) if keep is not None else scratch
        accounting: RequestAccounting | AuditAccounting
        if control_plane is ControlPlane.KUBE:
            audit_log = Path(state) / "kube-audit.log"
            accounting = AuditAccounting(audit_log)
            counting: dict[str, Any] = {"rbac_usage": audit_log}
        else:
            accounting = RequestAccounting()
            counting = {"api_stages": (accounting,)}
        cluster = SimCluster(
            ClusterConfig(
                state_dir=Path(state),
                topology=Topology(racks, per_rack, seed=state),
                manifests=DEFAULT_MANIFESTS,
                imex_path=str(wrappers.ensure()),
                control_plane=control_plane,
                **counting,
            )
        )
        out: dict[str, Any] = {
            "size": f"{racks}x{per_rack}",
            "nodes": nodes,
            "control_plane": str(control_plane),
        }
        started = time.perf_counter()
        try:
            await cluster.start()
            await cluster.wait_ready(components=False, within=within)
            out["cluster_up_s"] = round(time.perf_counter() - started, 3)
            await cluster.wait_ready(components=True, within=within)
            out["components_ready_s"] = round(time.perf_counter() - started, 3)
            out["isolation"] = str(cluster.isolation)
            out["api_requests_setup"] = accounting.snapshot()
            api = await connect(
                ClientConfig(kubeconfig=str(cluster.layout.kubeconfig), qps=0, user_agent="bench")
            )
            try:
                await api.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
                accounting.reset()
                before = Sample.take()
                out["cpu_setup_s"] = before.cpu_since(Sample({}, 0.0, 0.0))
                t0 = time.perf_counter()
                await api.create(COMPUTE_DOMAINS, domain_body(nodes), NAMESPACE)
                await api.create(DEPLOYMENTS, job_body(nodes), NAMESPACE)
                seen: dict[str, float] = {}
                try:
                    await watch_job(api, nodes, t0, within, seen)
                except TimeoutError as exc:
                    out["error"] = str(exc)  # what was reached is still worth reporting
                out.update(seen)
            finally:
                await api.close()
            out["api_requests"] = accounting.snapshot()
            out["api_requests_total"] = accounting.total()
            after = Sample.take()
            out["cpu_s"] = after.cpu_since(before)
            out["peak_rss_mib"] = after.memory()
        finally:
            t0 = time.perf_counter()
            await cluster.stop()
            out["cluster_down_s"] = round(time.perf_counter() - t0, 3)
    return out


def run_size(
    size: str, within: float, keep: Path | None, control_plane: ControlPlane
) -> dict[str, Any]:
    """Measure one size on ``control_plane`` in a child process; its JSON document (or the
    error)."""
    extra = ["--keep", str(keep / str(control_plane) / size)] if keep is not None else []
    child = subprocess.run(
        [sys.executable, __file__, "--one", size, "--within", str(within),
         f"--control-plane={control_plane}", *extra],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    if child.returncode != 0 or not child.stdout.strip():
        error = child.stderr.strip().splitlines()[-20:]
        return {"size": size, "control_plane": str(control_plane), "error": error}
    result: dict[str, Any] = json.loads(child.stdout)
    return result


def machine() -> dict[str, Any]:
    with open("/proc/meminfo") as meminfo:
        mem = {line.split(":")[0]: int(line.split()[1]) for line in meminfo}
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "mem_total_gib": round(mem["MemTotal"] / 2**20, 1),
        "mem_available_gib": round(mem["MemAvailable"] / 2**20, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="RACKSxNODES, comma separated")
    parser.add_argument("--within", type=float, default=300.0, help="deadline of each wait")
    parser.add_argument(
        "--keep", type=Path, help="keep each size's state (logs) under KEEP/<control plane>/RxN"
    )
    parser.add_argument(
        "--control-plane",
        default=str(ControlPlane.EMBEDDED),
        help="the control planes to measure on, comma separated: embedded, kube (make kube-bins)",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)  # one size, in this process
    args = parser.parse_args(argv)
    try:
        planes = parse_control_planes(args.control_plane)
        sizes = [parse_size(s) for s in (args.one or args.sizes).split(",")]
    except ValueError as exc:
        parser.error(str(exc))
    if args.one:
        (racks, per_rack), plane = sizes[0], planes[0]
        result = asyncio.run(measure(racks, per_rack, args.within, args.keep, plane))
        print(json.dumps(result))
        return 0
    by_plane: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for plane in planes:
        results = by_plane.setdefault(str(plane), {"sizes": []})["sizes"]
        for racks, per_rack in sizes:
            before = machine()
            result = run_size(f"{racks}x{per_rack}", args.within, args.keep, plane)
            result["machine_before"] = before
            results.append(result)
    document = {"benchmark": "e2e", "control_planes": by_plane}
    print(json.dumps(document, indent=2))
    failed = any("error" in r for plane in by_plane.values() for r in plane["sizes"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
