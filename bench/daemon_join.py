"""How fast a whole domain registers, and how many API writes it costs.

Run: ``python bench/daemon_join.py [--sizes 18x1,72x4,288x16] [--runs N]`` (prints one JSON
document). For each size ``KxC`` (K daemons spread over C cliques of one ComputeDomain), K
in-process daemons (:class:`computedomain_sim.imex.hollow.HollowDaemon`: the real registration
loop, watches and hosts-file sync, each with its own API client and client-side rate limit
5 qps / burst 10 as client-go's defaults) start at the same instant against an embedded API
server running in its own process (as it would in a cluster). Measured from the start until
every daemon has an entry with a unique index in its clique and every daemon's hosts file maps
exactly its clique's entries; plus API writes (creates and updates sent, successful or not) and
409 conflicts per daemon, and where the time went: ``phases`` gives, from the start, when every
daemon's membership watch had listed (start-up: connections, lists, watches) and when the
first, median and last daemon had written its own entry (the join proper; the rest until
``seconds`` is hosts files catching up), and ``setup_seconds`` how long creating the clients
took, and ``loop_lag`` how far behind the daemons' event loop ran: a 10 ms timer there records
how late it wakes; ``behind_share`` is the summed lateness over the run's time (near 1: the
loop never caught up, the join was bound by this process's CPU, not by the server or the
backoff) and ``max_ms`` the longest stall; ``gc_seconds`` is the time that process spent in
Python's cyclic garbage collector meanwhile. Hundreds of daemons share that one loop and one
heap, where each real daemon has its own. Pods and clients are created before the clock starts.
The daemons' files go to tmpfs (``/dev/shm`` when present, else ``--files-dir``): here
hundreds of daemons share one disk, where each real daemon writes one small file on its own
node, so fsync latency of the test machine's disk would otherwise dominate what is measured.

Targets (issue 5): 18 daemons converge in at most 1 s with at most 3 writes per daemon on
average; 288 daemons in at most 5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psutil

from computedomain.api import names
from computedomain.daemon import modes
from computedomain.daemon.identity import Identity
from computedomain.daemon.shapes import own_entry
from computedomain.kube import errors, resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from computedomain.policies import registry
from computedomain_sim.imex.hollow import HollowDaemon

ROOT = Path(__file__).resolve().parents[1]
CRDS = sorted((ROOT / "deployments" / "base" / "crds").glob("*.yaml"))
LIMIT = 18
NAMESPACE = "dra-driver-nvidia-gpu"
SERVER_SCRIPT = """
import sys, time
from pathlib import Path
from computedomain_sim.apiserver import testing
with testing.running(Path(sys.argv[1])) as server:
    server.install_crds([Path(p) for p in sys.argv[2:]])
    print(server.url, server.token, flush=True)
    sys.stdin.read()
"""


def clique_id(n: int) -> str:
    return f"2df84740-d3cb-b5ce-4e7e-98352b5a71b5.{n}"


@contextlib.contextmanager
def api_server(directory: Path) -> Any:
    """The embedded API server in a child process; yields (url, token, pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER_SCRIPT, str(directory), *map(str, CRDS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url, token = proc.stdout.readline().split()
        yield url, token, proc.pid
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


async def create_pods(api: Api, cd_uid: str, count: int) -> list[tuple[str, str, str]]:
    """(pod name, pod UID, pod IP) of ``count`` running daemon pods."""
    with contextlib.suppress(errors.AlreadyExists):
        await api.create(resources.NAMESPACES, {"metadata": {"name": NAMESPACE}})

    async def one(i: int) -> tuple[str, str, str]:
        name, ip = f"daemon-{cd_uid[:8]}-{i}", f"10.{i // 250}.{i % 250}.{(i * 7) % 250 + 1}"
        body = {
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "labels": {names.COMPUTE_DOMAIN_LABEL: cd_uid},
            },
            "spec": {"nodeName": f"node-{i}", "containers": [{"name": "d", "image": "x"}]},
        }
        created = await api.create(resources.PODS, body, NAMESPACE)
        status = {"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}}
        await api.patch(resources.PODS, name, status, namespace=NAMESPACE, subresource="status")
        return name, str(created["metadata"]["uid"]), ip

    return list(await asyncio.gather(*(one(i) for i in range(count))))


def converged(daemons: list[HollowDaemon], per_clique: int) -> bool:
    """Every daemon registered, indices unique per clique, every hosts file up to date."""
    # Cheap test first (this runs in the daemons' process, every few milliseconds).
    for daemon in daemons:
        last = daemon.parts.sync.last  # type: ignore[attr-defined]
        if last is None or last.own_index is None or len(last.names) != per_clique:
            return False
    by_clique: dict[str, dict[str, int]] = {}
    for daemon in daemons:
        obj = daemon.parts.loop.cache.get()
        entry = own_entry(daemon.parts.shape, obj, daemon.identity.node_name) if obj else None
        if entry is None or entry.ip_address != daemon.identity.pod_ip:
            return False
        by_clique.setdefault(daemon.identity.clique_id, {})[daemon.identity.node_name] = entry.index
    for indices in by_clique.values():
        if len(indices) != per_clique or len(set(indices.values())) != per_clique:
            return False
    ips = {d.identity.node_name: d.identity.pod_ip for d in daemons}
    for daemon in daemons:
        policy = daemon.dns_policy
        clique = by_clique[daemon.identity.clique_id]
        expected = tuple(sorted((policy.dns_name(i), ips[n]) for n, i in clique.items()))
        last = daemon.parts.sync.last  # type: ignore[attr-defined]
        if last is None or last.names != expected:
            return False
    return True


class GcTimer:
    """A ``gc.callbacks`` entry summing the time spent in collections."""

    def __init__(self) -> None:
        self.total = 0.0
        self._start = 0.0

    def __call__(self, phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start


async def loop_lag(samples: list[float], period: float = 0.01) -> None:
    """Record how late each ``period`` sleep wakes (until cancelled): how busy this process's
    event loop is. With hundreds of daemons in one process the join can be bound by this
    process's CPU rather than by the API server or the backoff."""
    loop = asyncio.get_running_loop()
    while True:
        start = loop.time()
        await asyncio.sleep(period)
        samples.append(loop.time() - start - period)


def files_agree(daemons: list[HollowDaemon]) -> bool:
    """After convergence: the hosts files on disk say what the syncs recorded."""
    for daemon in daemons:
        text = daemon.paths.hosts_file.read_text()
        last = daemon.parts.sync.last  # type: ignore[attr-defined]
        lines = {line for line in text.splitlines() if line.startswith("10.")}
        if lines != {f"{ip}\t{name}" for name, ip in last.names}:
            return False
    return True


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU time of a process (this one by default)."""
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


async def run_size(
    url: str, token: str, *, server_pid: int, count: int, cliques: int, tmp: Path
) -> dict[str, Any]:
    admin = await connect(ClientConfig(url=url, token=token, qps=0))
    cd_uid = str(uuid.uuid4())
    pods = await create_pods(admin, cd_uid, count)
    policies = registry.load()
    daemons = []
    setup = time.perf_counter()
    for i, (pod, uid, ip) in enumerate(pods):
        identity = Identity(
            node_name=f"node-{i}",
            pod_ip=ip,
            pod_uid=uid,
            pod_name=pod,
            pod_namespace=NAMESPACE,
            clique_id=clique_id(i % cliques),
            cd_uid=cd_uid,
        )
        daemons.append(
            await HollowDaemon.connect(
                url,
                token,
                identity,
                tmp / cd_uid / f"node-{i}",
                mode=modes.CLIQUES,
                limit=LIMIT,
                index_policy=policies.index.get("lowest-free"),
                dns_policy=policies.dns_names.get("upstream"),
            )
        )
    for daemon in daemons:  # static files first: not part of joining
        daemon.directory.mkdir(parents=True, exist_ok=True)
        daemon.mode.prepare(daemon.paths, daemon.dns_policy, daemon.limit)
    setup = time.perf_counter() - setup
    cpu_daemons, cpu_server = cpu_seconds(), cpu_seconds(server_pid)
    lags: list[float] = []
    lag_task = asyncio.create_task(loop_lag(lags))
    collector = GcTimer()
    gc.callbacks.append(collector)
    start = time.perf_counter()
    await asyncio.gather(*(d.start() for d in daemons))
    listed = [
        asyncio.create_task(_at(d.parts.membership_informer.wait_for_sync())) for d in daemons
    ]
    registered = [asyncio.create_task(_at(d.parts.loop.registered.wait())) for d in daemons]
    deadline = start + 60
    while not converged(daemons, count // cliques):
        if time.perf_counter() > deadline:
            break
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - start
    lag_task.cancel()
    gc.callbacks.remove(collector)
    cpu_daemons, cpu_server = cpu_seconds() - cpu_daemons, cpu_seconds(server_pid) - cpu_server
    ok = converged(daemons, count // cliques) and files_agree(daemons)
    phases = {
        "all_listed": _spread(listed, start)[2],
        **dict(zip(("first_registered", "median_registered", "last_registered"),
                   _spread(registered, start), strict=True)),
    }  # fmt: skip
    writes = [d.parts.registrar.stats.writes for d in daemons]
    conflicts = [d.parts.registrar.stats.conflicts for d in daemons]
    reads = [d.parts.registrar.stats.reads for d in daemons]
    verbs: dict[str, int] = {}
    for daemon in daemons:
        for (verb, resource, code), n in daemon.api.stats.snapshot().items():
            key = f"{verb} {resource} {code}"
            verbs[key] = verbs.get(key, 0) + n
    await asyncio.gather(*(d.crash() for d in daemons))
    await admin.close()
    return {
        "daemons": count,
        "cliques": cliques,
        "converged": ok,
        "seconds": round(elapsed, 3),
        "writes_per_daemon": round(statistics.mean(writes), 2),
        "writes_max": max(writes),
        "conflicts_per_daemon": round(statistics.mean(conflicts), 2),
        "conflicts_max": max(conflicts),
        "gets_per_daemon": round(statistics.mean(reads), 2),
        "requests_per_daemon": {k: round(n / count, 2) for k, n in sorted(verbs.items())},
        "phases": phases,
        "setup_seconds": round(setup, 2),
        "cpu_seconds_daemons_process": round(cpu_daemons, 2),
        "cpu_seconds_apiserver_process": round(cpu_server, 2),
        "loop_lag": _lag_summary(lags, elapsed),
        "gc_seconds": round(collector.total, 2),
    }


def _lag_summary(lags: list[float], elapsed: float) -> dict[str, float] | None:
    """The share of ``elapsed`` the daemons' event loop ran behind, and its longest stall."""
    if not lags or elapsed <= 0:
        return None
    return {
        "behind_share": round(min(sum(lags) / elapsed, 1.0), 2),
        "max_ms": round(1000 * max(lags), 1),
    }


async def _at(event: Any) -> float:
    """When ``event`` (an awaitable) completed, on the perf_counter clock."""
    await event
    return time.perf_counter()


def _spread(tasks: list[asyncio.Task[float]], start: float) -> tuple[float | None, ...]:
    """(first, median, last) completion after ``start``; last is None if some never did."""
    for task in tasks:
        task.cancel()  # those still waiting never completed
    times = sorted(t.result() - start for t in tasks if t.done() and not t.cancelled())
    if not times:
        return None, None, None
    last = round(times[-1], 3) if len(times) == len(tasks) else None
    return round(times[0], 3), round(statistics.median(times), 3), last


async def main_async(
    sizes: list[tuple[int, int]], runs: int, files_dir: str | None
) -> dict[str, Any]:
    results = []
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    with (
        tempfile.TemporaryDirectory() as tmp,
        tempfile.TemporaryDirectory(dir=files_dir) as files,
        api_server(Path(tmp) / "apiserver") as (url, token, pid),
    ):
        for count, cliques in sizes:
            for run in range(runs):
                result = await run_size(
                    url, token, server_pid=pid, count=count, cliques=cliques, tmp=Path(files)
                )
                result["run"] = run
                results.append(result)
    return {
        "benchmark": "daemon_join",
        "cpu_count": os.cpu_count(),
        "load_average_at_start": load_at_start,  # 1, 5, 15 min: a shared machine is noisy
        "targets": {"18x1": "<= 1 s, <= 3 writes/daemon", "288x16": "<= 5 s"},
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="18x1,72x4,288x16", help="KxC,... (daemons x cliques)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--files-dir",
        default="/dev/shm" if Path("/dev/shm").is_dir() else None,
        help="where the daemons' files go (default: /dev/shm)",
    )
    args = parser.parse_args()
    sizes = [(int(k), int(c)) for k, c in (s.split("x") for s in args.sizes.split(","))]
    print(json.dumps(asyncio.run(main_async(sizes, args.runs, args.files_dir)), indent=2))


if __name__ == "__main__":
    main()
