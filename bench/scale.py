"""Scale: D ComputeDomains with their jobs on up to 1,152 hollow nodes, until all are Running.

Run: ``python bench/scale.py [--sizes 288,576,1152] [--nodes-per-rack 18] [--domains D]
[--controller-cmd "cd-controller"]``. Prints one JSON document.

For each size N: the embedded API server runs in its own process with a stage that counts every
request by (User-Agent, verb, resource, status code) (``bench/controller.py --serve``); the
manifests of ``deployments/`` are installed except the two workloads; the ComputeDomain
controller runs as its own process (``--controller-cmd``, default ours, with the manifests' env
and client-side limits lifted, as ``bench/controller.py`` runs it); this process runs N hollow
nodes (:mod:`computedomain_sim.hollow`: the real kubelet plugin and daemon code, real gRPC and
HTTP) plus the simulation's scheduler and DaemonSet/ResourceClaim controllers. Once every node
serves and its ResourceSlice is published, the counters are reset and the clock starts: D
domains (default one per rack of 18) are created, each with a job of one worker pod per node of
its rack (pinned by hostname, with a channel claim from the domain's template). Measured until
every worker is Running and every domain's status is Ready.

Reported: seconds; API requests total and per node joined (by component and verb); writes
(create/update/patch/delete, events excluded) per node joined, of the driver (controller, plugin,
daemon) and with the simulated Kubernetes (kubelet, scheduler, controllers) added; 409 and 429
responses per node joined, and 422s of JSON patches whose test failed (a daemon's join that
lost a race, as a 409 is for a compare-and-swap); lost updates, checked at the end: every node
of a domain has exactly one entry in its domain's cliques, with an index unique in its clique
and status Ready, and no entry names a node outside the domain (when the run ends at
``--within`` before every domain is Ready, a node whose daemon pod is not Ready yet counts as
not joined, not as a lost update); peak RSS of the controller, the API server and this process
(sampled every 50 ms).

Targets (issue 8): 1,152 nodes in 64 domains Ready in at most 60 s, at most 4 API writes per node
joined on average, zero lost updates. Reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import controller as controller_bench

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.informer import FuncHandler, Informer
from computedomain.runtime import logs
from computedomain_sim.hollow import manifests
from computedomain_sim.hollow.cluster import HollowCluster, HollowConfig

BENCH_AGENT = controller_bench.BENCH_AGENT
NAMESPACE = "computedomain-system"
USERS = "scale-users"
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
# What stands in for Kubernetes itself (kubelet, scheduler, controllers): not the driver's writes.
KUBERNETES_AGENTS = ("kubelet", "sim-controllers")
TARGETS = {"seconds_1152_nodes_64_domains": 60.0, "writes_per_node": 4.0, "lost_updates": 0}


async def sample_rss(pid: int, peak: list[float], stop: asyncio.Event) -> None:
    """Peak RSS of one process (MiB) into ``peak[0]``, every 0.2 s until ``stop``. (Not
    bench/controller.py's sampler: walking the process tree every 50 ms cost this process, which
    runs the hollow nodes, a tenth of its CPU.)"""
    import psutil

    with contextlib.suppress(psutil.Error):
        proc = psutil.Process(pid)
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss / 2**20)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.2)


async def start_server(directory: Path) -> asyncio.subprocess.Process:
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(controller_bench.__file__)),
        "--serve",
        str(directory),
        stdout=asyncio.subprocess.DEVNULL,
    )
    for _ in range(1200):
        if (directory / "url").exists():
            return server
        await asyncio.sleep(0.05)
    msg = "the API server did not start"
    raise RuntimeError(msg)


def domain_body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.COMPUTE_DOMAIN_KIND,
        "metadata": {"name": name, "namespace": USERS},
        "spec": {"channel": {"resourceClaimTemplate": {"name": f"{name}-channel"}}},
    }


def worker_body(domain: str, node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{domain}-{node}", "namespace": USERS, "labels": {"job": domain}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [
                {"name": "main", "image": "worker", "resources": {"claims": [{"name": "imex"}]}}
            ],
            "resourceClaims": [{"name": "imex", "resourceClaimTemplateName": f"{domain}-channel"}],
        },
    }


def _running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def _pod_ready(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _domain_ready(cd: dict[str, Any]) -> bool:
    return (cd.get("status") or {}).get("status") == "Ready"


def lost_updates(
    cliques: list[dict[str, Any]],
    domains: dict[str, list[str]],
    uid_of: dict[str, str],
    joined: set[str] | None = None,
) -> dict[str, Any]:
    """Every node of a domain once in its cliques, indices unique per clique, all Ready. Pure.

    ``joined``: the nodes whose daemon pod is Ready, when the run ended before every domain was
    Ready. A node outside it that has no entry (or a NotReady one) had not joined yet at the
    deadline: counted under ``not_joined``, not as a lost update. ``None``: the run completed,
    every node must be there."""
    problems: list[str] = []
    not_joined: set[str] = set()
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for clique in cliques:
        uid = (clique["metadata"].get("labels") or {}).get(names.COMPUTE_DOMAIN_LABEL) or clique[
            "metadata"
        ]["name"].split(".", 1)[0]
        by_domain.setdefault(uid, []).append(clique)

    def counts(node: str) -> bool:
        return joined is None or node in joined

    for domain, nodes in domains.items():
        seen: Counter[str] = Counter()
        for clique in by_domain.get(uid_of[domain], []):
            entries = clique.get("daemons") or []
            indices = [e.get("index") for e in entries]
            if len(set(indices)) != len(indices):
                problems.append(f"{clique['metadata']['name']}: duplicate index")
            for entry in entries:
                node = entry.get("nodeName", "")
                seen[node] += 1
                if entry.get("status") == "Ready":
                    continue
                if counts(node):
                    problems.append(f"{domain}/{node}: {entry.get('status')}")
                else:
                    not_joined.add(node)
        missing = [n for n in nodes if seen[n] == 0]
        not_joined.update(n for n in missing if not counts(n))
        doubled = [n for n, c in seen.items() if c > 1]
        strangers = [n for n in seen if n not in nodes]
        problems += [f"{domain}: entry of {n} lost" for n in missing if counts(n)]
        problems += [f"{domain}: {n} listed twice" for n in doubled]
        problems += [f"{domain}: {n} is not in the domain" for n in strangers]
    return {"count": len(problems), "first": problems[:10], "not_joined": len(not_joined)}


class Progress:
    """Workers Running and domains Ready as the watches report them, kept by informer handlers:
    :meth:`wait` returns once all are (a scan of every pod 20 times a second was 1.6 % of the
    CPU of the very process being measured at 1,152 nodes)."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.ready: set[str] = set()
        self._want: tuple[float, float] = (float("inf"), float("inf"))
        self._done = asyncio.Event()

    def pod(self, pod: dict[str, Any], *, gone: bool = False) -> None:
        meta = pod["metadata"]
        if meta.get("namespace") != USERS:
            return
        if _running(pod) and not gone:
            self.running.add(str(meta["uid"]))
        else:
            self.running.discard(str(meta["uid"]))
        self._check()

    def domain(self, cd: dict[str, Any], *, gone: bool = False) -> None:
        uid = str(cd["metadata"]["uid"])
        if _domain_ready(cd) and not gone:
            self.ready.add(uid)
        else:
            self.ready.discard(uid)
        self._check()

    def expect(self, workers: int, domains: int) -> None:
        self._want = (workers, domains)
        self._check()

    def _check(self) -> None:
        if len(self.running) >= self._want[0] and len(self.ready) >= self._want[1]:
            self._done.set()
        else:
            self._done.clear()

    async def wait(self, within: float) -> bool:
        """True once every expected worker runs and domain is Ready; False after ``within``."""
        try:
            async with asyncio.timeout(within):
                await self._done.wait()
        except TimeoutError:
            return False
        return True


def handler(on_change: Any) -> FuncHandler:
    """An informer handler calling ``on_change(obj)`` and ``on_change(obj, gone=True)``."""
    return FuncHandler(
        add=on_change,
        update=lambda _o, new: on_change(new),
        delete=lambda obj: on_change(obj, gone=True),
    )


def _daemon_ready_nodes(pods: list[dict[str, Any]]) -> set[str]:
    """Nodes whose daemon pod (in the driver's namespace) is Ready. Pure."""
    return {
        str((p.get("spec") or {}).get("nodeName"))
        for p in pods
        if p["metadata"].get("namespace") == NAMESPACE and _pod_ready(p)
    }


def summarize(rows: list[dict[str, Any]], nodes: int) -> dict[str, Any]:
    by_agent: Counter[str] = Counter()
    by_request: Counter[str] = Counter()
    writes = driver_writes = total = conflicts = failed_tests = throttled = 0
    for row in rows:
        count = row["count"]
        total += count
        by_agent[f"{row['agent']} {row['verb']}"] += count
        by_request[f"{row['agent']} {row['verb']} {row['resource']} {row['code']}"] += count
        if row["verb"] in WRITE_VERBS and row["resource"] != "events":
            writes += count
            if row["agent"] not in KUBERNETES_AGENTS:
                driver_writes += count
        conflicts += count if row["code"] == 409 else 0
        failed_tests += count if row["code"] == 422 and row["verb"] == "patch" else 0
        throttled += count if row["code"] == 429 else 0
    return {
        "requests": total,
        "requests_per_node": round(total / nodes, 2),
        "writes_per_node": round(driver_writes / nodes, 2),
        "writes_per_node_with_simulated_kubernetes": round(writes / nodes, 2),
        "conflicts_409_per_node": round(conflicts / nodes, 3),
        # A JSON patch whose test failed (the daemons' joins): a lost race, like a 409.
        "failed_patch_tests_422_per_node": round(failed_tests / nodes, 3),
        "throttled_429_per_node": round(throttled / nodes, 3),
        "requests_per_node_by_component_and_verb": {
            k: round(v / nodes, 2) for k, v in sorted(by_agent.items())
        },
        "requests_by_component_verb_resource_code": dict(sorted(by_request.items())),
    }


class Timeline:
    """When each pod (workers and daemon pods) first reached each stage, seconds from ``t0``:
    where the time goes."""

    STAGES = ("created", "claims", "bound", "running", "ready")

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.seen: dict[str, dict[str, float]] = {}

    def observe(self, pod: dict[str, Any]) -> None:
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        kind = "daemon" if meta.get("namespace") == NAMESPACE else "worker"
        stages = self.seen.setdefault(f"{kind}/{meta['uid']}", {})
        now = round(time.monotonic() - self.t0, 2)
        stages.setdefault("created", now)
        if status.get("resourceClaimStatuses"):
            stages.setdefault("claims", now)
        if spec.get("nodeName"):
            stages.setdefault("bound", now)
        if status.get("phase") == "Running":
            stages.setdefault("running", now)
        if _pod_ready(pod):
            stages.setdefault("ready", now)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for kind in ("worker", "daemon"):
            rows = [v for k, v in self.seen.items() if k.startswith(kind + "/")]
            out[kind] = {
                stage: _spread([r[stage] for r in rows if stage in r]) for stage in self.STAGES
            }
        return out


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    values = sorted(values)
    return {
        "n": len(values),
        "first": values[0],
        "median": values[len(values) // 2],
        "last": values[-1],
    }


async def wait_for(check: Any, within: float) -> None:
    """Poll ``check`` (a cheap look at informer stores) until true; TimeoutError after
    ``within`` seconds."""
    async with asyncio.timeout(within):
        while not check():  # noqa: ASYNC110 (the stores have no change signal to wait on)
            await asyncio.sleep(0.05)


async def run_size(  # noqa: PLR0917 (one call site, the bench's own parameters)
    nodes: int, per_rack: int, domains: int, command: list[str], files: Path, within: float
) -> dict[str, Any]:
    racks = nodes // per_rack
    with tempfile.TemporaryDirectory(prefix="cd-scale-") as tmp:
        directory = Path(tmp)
        server = await start_server(directory)
        ctl: asyncio.subprocess.Process | None = None
        hollow: HollowCluster | None = None
        node_files: Path | None = None
        samplers: list[asyncio.Task[None]] = []
        stop = asyncio.Event()
        peaks = {"controller": [0.0], "api_server": [0.0], "hollow_process": [0.0]}
        try:
            kubeconfig = directory / "kubeconfig"
            api = await connect(
                ClientConfig(kubeconfig=str(kubeconfig), qps=0, user_agent=BENCH_AGENT)
            )
            found = manifests.load()
            await manifests.install_manifests(api, found.objects)
            await api.create(resources.NAMESPACES, {"metadata": {"name": USERS}})
            env = {
                **os.environ,
                **found.controller_env,
                "POD_NAME": "scale-controller",
                "NAMESPACE": NAMESPACE,
                "KUBECONFIG": str(kubeconfig),
                "KUBE_API_QPS": "100000",
                "KUBE_API_BURST": "100000",
                "HTTP_ENDPOINT": "",
                "LOG_VERBOSITY": "1",
            }
            with (directory / "controller.log").open("wb") as log:
                ctl = await asyncio.create_subprocess_exec(
                    *command, env=env, stdout=log, stderr=asyncio.subprocess.STDOUT
                )
            samplers = [
                asyncio.create_task(sample_rss(pid, peaks[name], stop))
                for name, pid in (
                    ("controller", ctl.pid),
                    ("api_server", server.pid),
                    ("hollow_process", os.getpid()),
                )
            ]
            node_files = Path(tempfile.mkdtemp(prefix="hl-", dir=files))
            hollow = HollowCluster(
                HollowConfig(
                    client=ClientConfig(kubeconfig=str(kubeconfig)),
                    state_dir=node_files,
                    racks=racks,
                    nodes_per_rack=per_rack,
                    namespace=NAMESPACE,
                    plugin_env=found.plugin_env,
                )
            )
            t0 = time.monotonic()
            await hollow.start(within=within)
            slices = Informer(api, resources.RESOURCE_SLICES, name="bench-slices")
            # Every pod, through the hollow nodes' own pod informer (this process decoding a
            # pod watch of its own would be the bench's cost counted as the nodes'): the
            # timeline needs the daemon pods, the end the workers.
            assert hollow.shared is not None
            pods = hollow.shared.pods
            timeline, progress = Timeline(), Progress()
            pods.add_handler(
                FuncHandler(add=timeline.observe, update=lambda _o, new: timeline.observe(new))
            )
            pods.add_handler(handler(progress.pod))
            cds = Informer(api, resources.COMPUTE_DOMAINS, namespace=USERS, name="bench-cds")
            cds.add_handler(handler(progress.domain))
            watches = [asyncio.create_task(i.run()) for i in (slices, cds)]
            for informer in (slices, cds):
                await informer.wait_for_sync()
            await wait_for(lambda: len(slices.store) >= nodes, within)
            nodes_up = time.monotonic() - t0
            await asyncio.sleep(1.0)
            await controller_bench._counters(api, reset=True)
            cpu0 = {
                "controller": controller_bench._cpu(ctl.pid),
                "api_server": controller_bench._cpu(server.pid),
                "hollow_process": controller_bench._cpu(os.getpid()),
            }

            # -- the measured part ---------------------------------------------------------
            per_domain = racks // domains if domains <= racks else 0
            plan: dict[str, list[str]] = {}
            for d in range(domains):
                rack_range = range(d * per_domain, (d + 1) * per_domain) if per_domain else [d]
                plan[f"job{d:03d}"] = [f"r{r}n{i}" for r in rack_range for i in range(per_rack)]
            started = time.monotonic()
            timeline.t0 = started
            created = await asyncio.gather(
                *(api.create(resources.COMPUTE_DOMAINS, domain_body(d), USERS) for d in plan)
            )
            uid_of = {c["metadata"]["name"]: c["metadata"]["uid"] for c in created}
            await asyncio.gather(
                *(
                    api.create(resources.PODS, worker_body(d, n), USERS)
                    for d, ns in plan.items()
                    for n in ns
                )
            )
            workers = sum(len(v) for v in plan.values())

            progress.expect(workers, domains)
            completed = await progress.wait(within)
            elapsed = time.monotonic() - started
            cpu = {
                "controller": round(controller_bench._cpu(ctl.pid) - cpu0["controller"], 2),
                "api_server": round(controller_bench._cpu(server.pid) - cpu0["api_server"], 2),
                "hollow_process": round(
                    controller_bench._cpu(os.getpid()) - cpu0["hollow_process"], 2
                ),
            }
            rows = await controller_bench._counters(api)
            cliques, _ = await api.list_all(resources.COMPUTE_DOMAIN_CLIQUES, namespace=NAMESPACE)
            joined = sum(len(v) for v in plan.values())
            result = {
                "nodes": nodes,
                "racks": racks,
                "domains": domains,
                "workers": workers,
                "controller_cmd": shlex.join(command),
                "completed": completed,
                "seconds_nodes_up": round(nodes_up, 2),
                "seconds_until_all_running_and_ready": round(elapsed, 2),
                "workers_running": len(progress.running),
                "domains_ready": len(progress.ready),
                "lost_updates": lost_updates(
                    cliques,
                    plan,
                    uid_of,
                    None if completed else _daemon_ready_nodes(pods.store.list()),
                ),
                "timeline_seconds": timeline.summary(),
                **summarize(rows, joined),
                # CPU seconds each process got while measured: on a shared machine, compare
                # with the wall-clock seconds to see how much of the time was waiting for a CPU.
                "cpu_seconds_measured": cpu,
                "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
                "peak_rss_mb": {k: round(v[0], 1) for k, v in peaks.items()},
            }
            result["targets_met"] = {
                "writes_per_node": result["writes_per_node"] <= TARGETS["writes_per_node"],
                "lost_updates": result["lost_updates"]["count"] == 0,
            }
            if nodes >= 1152:
                result["targets_met"]["seconds"] = completed and elapsed <= 60.0
            for task in watches:
                task.cancel()
            await asyncio.gather(*watches, return_exceptions=True)
            await api.close()
            return result
        finally:
            stop.set()
            await asyncio.gather(*samplers, return_exceptions=True)
            if hollow is not None:
                await hollow.stop()
            if node_files is not None:  # tmpfs by default: memory until removed
                shutil.rmtree(node_files, ignore_errors=True)
            for proc in (ctl, server):
                if proc is not None and proc.returncode is None:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        await asyncio.wait_for(proc.wait(), 20)
                    except TimeoutError:
                        proc.kill()
                        await proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="288,576,1152", help="node counts, comma-separated")
    parser.add_argument("--nodes-per-rack", type=int, default=18)
    parser.add_argument("--domains", type=int, default=0, help="per size (default: one per rack)")
    parser.add_argument(
        "--controller-cmd",
        default=str(Path(sys.executable).with_name("cd-controller")),
        help="the controller command line (gets upstream's env: KUBECONFIG, NAMESPACE, ...)",
    )
    parser.add_argument("--within", type=float, default=300.0, help="give up after (s)")
    parser.add_argument("-v", type=int, default=0, help="log verbosity of this process (stderr)")
    parser.add_argument(
        "--files-dir",
        default="/dev/shm" if Path("/dev/shm").is_dir() else tempfile.gettempdir(),
        help="where the hollow nodes' files go (default: /dev/shm)",
    )
    args = parser.parse_args()
    logs.setup(args.v, "bench-scale")
    command = shlex.split(args.controller_cmd)
    runs = []
    load = [round(x, 2) for x in os.getloadavg()]
    for size in (int(s) for s in args.sizes.split(",") if s.strip()):
        racks = size // args.nodes_per_rack
        domains = args.domains or racks
        runs.append(
            asyncio.run(
                run_size(
                    racks * args.nodes_per_rack,
                    args.nodes_per_rack,
                    domains,
                    command,
                    Path(args.files_dir),
                    args.within,
                )
            )
        )
    doc = {
        "benchmark": "scale",
        "cpu_count": os.cpu_count(),
        "load_average_at_start": load,
        "targets": TARGETS,
        "runs": runs,
    }
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        raise SystemExit(main())
