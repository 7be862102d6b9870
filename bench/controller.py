"""Benchmark a ComputeDomain controller: N domains created at once, until all are reconciled.

Run: ``python bench/controller.py [--domains 100,1000] [--controller-cmd "cd-controller"]``.
Prints one JSON document.

For each N: an embedded API server runs in its own process, with a pipeline stage that counts
every request by (verb, resource, status code) and by client; the controller under test runs as
a command line (default: ours, ``cd-controller`` from this virtual environment), so any
implementation of the same contract (flags/env of controller.md §1.1) can be measured on the
same workload, with client-side QPS limits lifted (``KUBE_API_QPS``/``KUBE_API_BURST``). After a
warm-up domain proves the controller is serving, the bench creates N domains concurrently and
measures the time until every one has our finalizer, its DaemonSet, both claim templates and a
status, then waits for the controller's requests to stop (quiescence) and reports its API
requests per domain by verb and its peak RSS (the process tree, sampled every 50 ms).
The bench's own requests carry their own User-Agent and are not counted.

Targets (issue 3): at most 5 writes per domain on the happy path, 1,000 domains reconciled in at
most 30 s, RSS at most 150 MB. They are reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CRDS = ROOT / "deployments" / "base" / "crds"
BENCH_AGENT = "cd-bench"
COUNTERS_PATH = "/bench/counters"
DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
FINALIZER = DOMAIN_LABEL
WRITE_VERBS = ("create", "update", "patch", "delete")
TARGETS = {"writes_per_domain": 5, "seconds_for_1000": 30.0, "peak_rss_mb": 150.0}


# -- the API server process ---------------------------------------------------------------------


def serve(directory: Path) -> None:
    """Run an embedded API server with a counting stage until SIGTERM (``--serve`` mode)."""
    from aiohttp import web

    from computedomain_sim.apiserver.pipeline import INFO
    from computedomain_sim.apiserver.server import EmbeddedApiServer
    from computedomain_sim.apiserver.status import ApiStatusError

    counts: Counter[tuple[str, str, str, int]] = Counter()

    @web.middleware
    async def count(request: web.Request, handler: Any) -> web.StreamResponse:
        agent = request.headers.get("User-Agent", "")
        if request.path == COUNTERS_PATH:
            if request.method == "DELETE":
                counts.clear()
            rows = [
                {"agent": a, "verb": v, "resource": r, "code": c, "count": n}
                for (a, v, r, c), n in sorted(counts.items())
            ]
            return web.json_response({"items": rows})
        info = request[INFO]
        resource = info.resource + (f"/{info.subresource}" if info.subresource else "")
        code = 0
        try:
            response = await handler(request)
            code = response.status
            return response
        except ApiStatusError as exc:
            code = exc.code
            raise
        finally:
            if not agent.startswith(BENCH_AGENT) and info.is_resource:
                counts[(agent.split("/")[0], info.verb, resource, code)] += 1

    async def main() -> None:
        server = EmbeddedApiServer(stages=[count], event_window=200_000)
        await server.start()
        await server.install_crds([CRDS])
        server.write_kubeconfig(directory / "kubeconfig")
        (directory / "url.tmp").write_text(server.url)
        (directory / "url.tmp").replace(directory / "url")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop()

    asyncio.run(main())


# -- the bench ----------------------------------------------------------------------------------


class Watcher:
    """Tracks which domains are fully reconciled, from watches on the bench's own connection."""

    def __init__(self) -> None:
        self.domains: dict[str, dict[str, Any]] = {}  # uid -> domain
        self.daemon_sets: set[str] = set()
        self.daemon_templates: set[str] = set()
        self.workload_templates: set[str] = set()

    def done(self, uid: str) -> bool:
        domain = self.domains.get(uid)
        return bool(
            domain is not None
            and FINALIZER in (domain["metadata"].get("finalizers") or [])
            and domain.get("status")
            and uid in self.daemon_sets
            and uid in self.daemon_templates
            and uid in self.workload_templates
        )


async def _watch(api: Any, informer: Any) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        await informer.run()


async def _sample_rss(pid: int, peak: list[float], stop: asyncio.Event) -> None:
    import psutil

    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    while not stop.is_set():
        total = 0
        with contextlib.suppress(psutil.Error):
            for proc in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += proc.memory_info().rss
        peak[0] = max(peak[0], total / 2**20)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.05)


def _cpu(pid: int) -> float:
    """User + system CPU seconds of a process and its children so far."""
    import psutil

    try:
        root = psutil.Process(pid)
        total = 0.0
        for proc in [root, *root.children(recursive=True)]:
            times = proc.cpu_times()
            total += times.user + times.system
    except psutil.Error:
        return 0.0
    return total


async def _counters(api: Any, *, reset: bool = False) -> list[dict[str, Any]]:
    method = "DELETE" if reset else "GET"
    result = await api.request(method, COUNTERS_PATH)
    return list(result.get("items") or [])


async def run_one(n: int, command: list[str], workers_env: dict[str, str]) -> dict[str, Any]:
    from computedomain.kube import resources
    from computedomain.kube.client import ClientConfig, connect
    from computedomain.kube.informer import FuncHandler, Informer

    with tempfile.TemporaryDirectory(prefix="cd-bench-") as tmp:
        directory = Path(tmp)
        server = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--serve", str(directory), stdout=asyncio.subprocess.DEVNULL
        )
        controller = None
        try:
            url_file = directory / "url"
            for _ in range(600):
                if url_file.exists():
                    break
                await asyncio.sleep(0.05)
            kubeconfig = directory / "kubeconfig"
            api = await connect(
                ClientConfig(kubeconfig=str(kubeconfig), qps=0, user_agent=BENCH_AGENT)
            )
            for ns in ("cd-driver", "cd-users"):
                await api.create(resources.NAMESPACES, {"metadata": {"name": ns}})
            env = {
                **os.environ,
                "POD_NAME": "bench-controller",
                "NAMESPACE": "cd-driver",
                "IMAGE_NAME": "registry.example/computedomain:bench",
                "LOG_VERBOSITY_CD_DAEMON": "1",
                "KUBECONFIG": str(kubeconfig),
                "KUBE_API_QPS": "100000",
                "KUBE_API_BURST": "100000",
                **workers_env,
            }
            log_path = directory / "controller.log"
            with log_path.open("wb") as log:  # a file, never a pipe nobody drains
                controller = await asyncio.create_subprocess_exec(
                    *command, env=env, stdout=log, stderr=asyncio.subprocess.STDOUT
                )
            peak = [0.0]
            stop_sampling = asyncio.Event()
            sampler = asyncio.create_task(_sample_rss(controller.pid, peak, stop_sampling))

            watcher = Watcher()

            def on_domain(obj: dict[str, Any]) -> None:
                watcher.domains[obj["metadata"]["uid"]] = obj

            def tracker(into: set[str]) -> FuncHandler:
                def add(obj: dict[str, Any]) -> None:
                    uid = (obj["metadata"].get("labels") or {}).get(DOMAIN_LABEL)
                    if uid:
                        into.add(uid)

                return FuncHandler(add=add, update=lambda old, new: add(new))

            informers = [
                Informer(api, resources.COMPUTE_DOMAINS, name="bench-cd"),
                Informer(api, resources.DAEMON_SETS, namespace="cd-driver", name="bench-ds"),
                Informer(
                    api,
                    resources.RESOURCE_CLAIM_TEMPLATES,
                    label_selector="resource.nvidia.com/computeDomainTarget=Daemon",
                    name="bench-drct",
                ),
                Informer(
                    api,
                    resources.RESOURCE_CLAIM_TEMPLATES,
                    label_selector="resource.nvidia.com/computeDomainTarget=Workload",
                    name="bench-wrct",
                ),
            ]
            informers[0].add_handler(
                FuncHandler(add=on_domain, update=lambda old, new: on_domain(new))
            )
            informers[1].add_handler(tracker(watcher.daemon_sets))
            informers[2].add_handler(tracker(watcher.daemon_templates))
            informers[3].add_handler(tracker(watcher.workload_templates))
            watches = [asyncio.create_task(_watch(api, inf)) for inf in informers]
            for inf in informers:
                await inf.wait_for_sync()

            def body(name: str) -> dict[str, Any]:
                return {
                    "apiVersion": "resource.nvidia.com/v1beta1",
                    "kind": "ComputeDomain",
                    "metadata": {"name": name, "namespace": "cd-users"},
                    "spec": {"channel": {"resourceClaimTemplate": {"name": f"{name}-channel"}}},
                }

            # Warm-up: the controller is serving once one domain is reconciled.
            warm = await api.create(resources.COMPUTE_DOMAINS, body("warm-up"))
            start_wait = time.monotonic()
            while not watcher.done(warm["metadata"]["uid"]):
                if controller.returncode is not None or time.monotonic() - start_wait > 120:
                    err = log_path.read_text(errors="replace")[-2000:]
                    msg = f"controller did not reconcile the warm-up domain: {err}"
                    raise RuntimeError(msg)
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.5)
            await _counters(api, reset=True)
            rss_before = peak[0]

            cpu_before = (_cpu(controller.pid), _cpu(server.pid))
            started = time.monotonic()
            created = await asyncio.gather(
                *(api.create(resources.COMPUTE_DOMAINS, body(f"cd-{i:05d}")) for i in range(n))
            )
            created_at = time.monotonic() - started
            uids = [c["metadata"]["uid"] for c in created]
            while not all(watcher.done(u) for u in uids):
                if controller.returncode is not None:
                    msg = f"controller exited with {controller.returncode}"
                    raise RuntimeError(msg)
                if time.monotonic() - started > 600:
                    break
                await asyncio.sleep(0.01)
            elapsed = time.monotonic() - started
            cpu = (_cpu(controller.pid) - cpu_before[0], _cpu(server.pid) - cpu_before[1])
            reconciled = sum(1 for u in uids if watcher.done(u))

            # Quiescence: the controller's request counters stop moving for 2 s.
            last: list[dict[str, Any]] = []
            quiet_since = time.monotonic()
            while time.monotonic() - quiet_since < 2.0:
                rows = await _counters(api)
                if rows != last:
                    last, quiet_since = rows, time.monotonic()
                await asyncio.sleep(0.2)
            stop_sampling.set()
            await sampler
            for task in watches:
                task.cancel()
            await asyncio.gather(*watches, return_exceptions=True)
            await api.close()
            return _report(
                n=n,
                command=command,
                elapsed=elapsed,
                created_at=created_at,
                reconciled=reconciled,
                rows=last,
                peak_rss=peak[0],
                rss_before=rss_before,
                cpu=cpu,
            )
        finally:
            if controller is not None and controller.returncode is None:
                controller.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(controller.wait(), 20)
                except TimeoutError:
                    controller.kill()
            if server.returncode is None:
                server.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(server.wait(), 20)
                except TimeoutError:
                    server.kill()


def _report(
    *,
    n: int,
    command: list[str],
    elapsed: float,
    created_at: float,
    reconciled: int,
    rows: list[dict[str, Any]],
    peak_rss: float,
    rss_before: float,
    cpu: tuple[float, float],
) -> dict[str, Any]:
    by_verb: Counter[str] = Counter()
    by_request: Counter[str] = Counter()
    writes = writes_no_events = conflicts = 0
    for row in rows:
        verb, resource, count = row["verb"], row["resource"], row["count"]
        by_verb[verb] += count
        by_request[f"{verb} {resource} {row['code']}"] += count
        if verb in WRITE_VERBS:
            writes += count
            if resource != "events":
                writes_no_events += count
        if row["code"] == 409:
            conflicts += count
    per_domain = {verb: round(count / n, 3) for verb, count in sorted(by_verb.items())}
    result = {
        "domains": n,
        "controller_cmd": shlex.join(command),
        "reconciled": reconciled,
        "seconds_until_all_reconciled": round(elapsed, 3),
        "seconds_to_create_domains": round(created_at, 3),
        "domains_per_second": round(reconciled / elapsed, 1) if elapsed else None,
        "requests_per_domain_by_verb": per_domain,
        "writes_per_domain": round(writes_no_events / n, 3),
        "writes_per_domain_with_events": round(writes / n, 3),
        "conflicts_per_domain": round(conflicts / n, 3),
        "requests": dict(sorted(by_request.items())),
        "peak_rss_mb": round(peak_rss, 1),
        "rss_after_warm_up_mb": round(rss_before, 1),
        "cpu_seconds_until_reconciled": {
            "controller": round(cpu[0], 2),
            "api_server": round(cpu[1], 2),
        },
    }
    result["targets_met"] = {
        "writes_per_domain": result["writes_per_domain"] <= TARGETS["writes_per_domain"],
        "peak_rss_mb": peak_rss <= TARGETS["peak_rss_mb"],
    }
    if n >= 1000:
        result["targets_met"]["seconds_for_1000"] = elapsed <= TARGETS["seconds_for_1000"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--domains", default="100,1000", help="comma-separated N values")
    parser.add_argument(
        "--controller-cmd",
        default=str(Path(sys.executable).with_name("cd-controller")),
        help="the controller command line (gets upstream's env: KUBECONFIG, NAMESPACE, ...)",
    )
    parser.add_argument("--workers", default="", help="WORKERS env for the controller (ours)")
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return 0
    command = shlex.split(args.controller_cmd)
    extra = {"WORKERS": args.workers} if args.workers else {}
    runs = [
        asyncio.run(run_one(int(n), command, extra)) for n in args.domains.split(",") if n.strip()
    ]
    print(json.dumps({"benchmark": "controller", "targets": TARGETS, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
