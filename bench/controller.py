"""Benchmark a ComputeDomain controller: many domains at once, or one domain at a time.

Run::

    python bench/controller.py [--domains 100,1000] [--controller-cmd CMD]
    python bench/controller.py --latency [--rounds 5] --controller-cmd CMD [--controller-cmd CMD]
    ... [--control-plane embedded,kube | --kubeconfig PATH]

Prints one JSON document, the runs under the control plane that served them (``{"benchmark":
..., "control_planes": {"embedded": {"runs": [...]}, "kube": {"runs": [...]}}}``). The
controller under test runs as a command line (default: ours, ``cd-controller`` from this
virtual environment) with upstream's environment (``KUBECONFIG``, ``NAMESPACE``, ``POD_NAME``,
...), so any implementation of the same contract can be measured on the same workload.

``--control-plane`` lists the control planes to measure on, one after the other (default
``embedded``). On ``embedded`` each command gets an embedded API server of its own, in its own
process, with a pipeline stage that counts every request by (verb, resource, status code) and
notes each client's first request. On ``kube`` each run gets a real control plane of its own
(etcd, kube-apiserver, kube-controller-manager, kube-scheduler from ``make kube-bins``) with
the CRDs installed; ``--kubeconfig`` points every command at an existing API server instead
(its CRDs are installed when missing). There the commands run one after another and requests
are not counted: the request figures are null. The bench's own requests carry their own
User-Agent and are never counted.

**Throughput** (the default): client-side QPS limits lifted (``KUBE_API_QPS``/
``KUBE_API_BURST``); after a warm-up domain proves the controller is serving, N domains are
created concurrently and the bench measures the time until every one has the finalizer, its
DaemonSet, both claim templates and a status, waits for the controller's requests to stop and
reports its API requests per domain by verb and its peak RSS (the process tree, every 50 ms).
Targets (issue 3): at most 5 writes per domain, 1,000 domains in at most 30 s, RSS at most
150 MB.

**Latency** (``--latency``): the controllers keep their own client limits (their defaults
unless ``--qps``/``--burst``). Start-up first, per command: a domain exists before the process
starts, and the bench reports the time from process start to the controller's first request
and to that domain reconciled, then the time from its delete to gone. Then, over ``--rounds``
rounds (interleaved between the commands when each has its own server), one domain is created
while the controller is serving and idle (its requests have stopped for ``--settle`` seconds,
long enough for a client bucket of 10 tokens at 5 QPS to refill) and deleted once it is idle
again, and the bench reports the time to each object, to the finalizer, to a status, and from
its delete to each object and the domain gone: median, min and max over the rounds, and each
round's figures. All times are seen through the bench's own watches, so both controllers pay
the same delivery delay.

NVIDIA's controller, built from its public repository for a comparison, reads its object
templates from ``/templates`` (the repository's ``templates/`` folder), and a build on client-go
1.35 or later sends built-in kinds as protobuf unless its client configuration names JSON, which
the embedded API server needs (it speaks JSON only).

Figures are reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import shlex
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CRDS = ROOT / "deployments" / "base" / "crds"
BENCH_AGENT = "cd-bench"
COUNTERS_PATH = "/bench/counters"
DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
TARGET_LABEL = "resource.nvidia.com/computeDomainTarget"
FINALIZER = DOMAIN_LABEL
DRIVER_NAMESPACE = "cd-driver"
USER_NAMESPACE = "cd-users"
WRITE_VERBS = ("create", "update", "patch", "delete")
TARGETS = {"writes_per_domain": 5, "seconds_for_1000": 30.0, "peak_rss_mb": 150.0}
# What a reconciled domain has, as the bench's watches name it.
OBJECTS = ("daemon_set", "daemon_template", "workload_template")
RECONCILED = ("finalizer", "status", *OBJECTS)
GONE = ("domain_gone", *(f"{what}_gone" for what in OBJECTS))
STEP_TIMEOUT = 120.0


# -- the API server process ---------------------------------------------------------------------


def serve(directory: Path) -> None:
    """Run an embedded API server with a counting stage until SIGTERM (``--serve`` mode)."""
    from aiohttp import web

    from computedomain_sim.apiserver.pipeline import INFO
    from computedomain_sim.apiserver.server import EmbeddedApiServer
    from computedomain_sim.apiserver.status import ApiStatusError

    counts: Counter[tuple[str, str, str, int]] = Counter()
    first: dict[str, float] = {}

    @web.middleware
    async def count(request: web.Request, handler: Any) -> web.StreamResponse:
        agent = request.headers.get("User-Agent", "")
        if request.path == COUNTERS_PATH:
            if request.method == "DELETE":
                counts.clear()
                first.clear()
            rows = [
                {"agent": a, "verb": v, "resource": r, "code": c, "count": n}
                for (a, v, r, c), n in sorted(counts.items())
            ]
            return web.json_response({"items": rows, "first_request": first})
        info = request[INFO]
        resource = info.resource + (f"/{info.subresource}" if info.subresource else "")
        code = 0
        if not agent.startswith(BENCH_AGENT):
            first.setdefault(agent.split("/")[0], time.monotonic())
        try:
            response: web.StreamResponse = await handler(request)
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


async def _stop(process: asyncio.subprocess.Process | None) -> None:
    """SIGTERM, then SIGKILL after 20 s; reaps the process."""
    if process is None or process.returncode is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), 20)
    except TimeoutError:
        process.kill()
        await process.wait()


class Server:
    """The API server one controller talks to: an embedded one (counting), a real control
    plane of its own (:meth:`kube`) or an existing one."""

    def __init__(
        self,
        kubeconfig: Path,
        process: asyncio.subprocess.Process | None = None,
        *,
        stop: Callable[[], Any] | None = None,
        pid: int | None = None,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.process = process
        self.counting = process is not None
        self._stop = stop
        # The API server's process, whose CPU time is reported (None: not on this machine).
        self.pid = process.pid if process is not None else pid

    @classmethod
    async def for_plane(cls, plane: str, directory: Path) -> Server:
        """The server of ``plane``: ``embedded``, ``kube``, or the path of a kubeconfig."""
        if plane == "embedded":
            return await cls.embedded(directory)
        if plane == "kube":
            return await cls.kube(directory)
        return cls(Path(plane))

    @classmethod
    async def kube(cls, directory: Path) -> Server:
        """etcd, kube-apiserver, kube-controller-manager and kube-scheduler (``make kube-bins``)
        on a loopback address of their own, state in ``directory``."""
        from computedomain_sim.cluster.cluster import SYSTEM_PATH
        from computedomain_sim.controlplane import binaries
        from computedomain_sim.controlplane.kube import KubeControlPlane
        from computedomain_sim.kubelet.ips import AddressBlock

        programs = await asyncio.to_thread(binaries.locate)
        block = AddressBlock.acquire()
        plane = KubeControlPlane(
            directory / "control-plane",
            block.control_plane_address(),
            binaries=programs,
            logs_dir=directory / "logs",
            pid_dir=directory / "pids",
            env={"PATH": SYSTEM_PATH},
        )

        async def stop() -> None:
            try:
                await plane.stop()
            finally:
                block.release()

        try:
            await plane.start()
            kubeconfig = directory / "kubeconfig"
            await asyncio.to_thread(plane.write_admin_kubeconfig, kubeconfig)
        except BaseException:
            await stop()
            raise
        apiserver = next(p for p in plane.programs if p.name == "kube-apiserver")
        pid = apiserver.process.pid if apiserver.process is not None else None
        return cls(kubeconfig, stop=stop, pid=pid)

    @classmethod
    async def embedded(cls, directory: Path) -> Server:
        process = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--serve", str(directory), stdout=asyncio.subprocess.DEVNULL
        )
        url_file = directory / "url"
        deadline = time.monotonic() + 60
        while not url_file.exists():
            if process.returncode is not None or time.monotonic() > deadline:
                await _stop(process)
                msg = "the embedded API server did not start"
                raise RuntimeError(msg)
            await asyncio.sleep(0.05)
        return cls(directory / "kubeconfig", process)

    async def stop(self) -> None:
        await _stop(self.process)
        if self._stop is not None:
            await self._stop()


async def _install_crds(api: Any) -> None:
    """Create the CRDs an existing server lacks, and wait until they are served."""
    import yaml

    from computedomain.kube import errors

    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for file in sorted(CRDS.glob("*.yaml")):
        for doc in yaml.safe_load_all(file.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            with contextlib.suppress(errors.AlreadyExists):
                await api.request("POST", path, body=doc)
            name = doc["metadata"]["name"]
            deadline = time.monotonic() + 60
            while True:
                crd = await api.request("GET", f"{path}/{name}")
                conditions = (crd.get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in conditions):  # fmt: skip
                    break
                if time.monotonic() > deadline:
                    msg = f"CRD {name} is not Established after 60 s"
                    raise RuntimeError(msg)
                await asyncio.sleep(0.2)


# -- what the bench sees ------------------------------------------------------------------------


class Timeline:
    """When the bench's own watches first saw each thing happen to each domain (by UID).

    ``seen[uid]`` maps ``finalizer``, ``status``, ``daemon_set``, ``daemon_template``,
    ``workload_template`` and, once deleted, ``<thing>_gone`` and ``domain_gone`` to a
    ``time.monotonic()`` reading.
    """

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, float]] = {}
        self.changed = asyncio.Event()

    def mark(self, uid: str, what: str) -> None:
        seen = self.seen.setdefault(uid, {})
        if what not in seen:
            seen[what] = time.monotonic()
            self.changed.set()

    def done(self, uid: str) -> bool:
        seen = self.seen.get(uid, {})
        return all(what in seen for what in RECONCILED)

    def gone(self, uid: str) -> bool:
        seen = self.seen.get(uid, {})
        return all(what in seen for what in GONE)

    def on_domain(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if FINALIZER in (meta.get("finalizers") or []):
            self.mark(meta["uid"], "finalizer")
        if obj.get("status"):
            self.mark(meta["uid"], "status")

    def handlers(self) -> dict[str, Any]:
        """One informer handler per watched kind."""
        from computedomain.kube.informer import FuncHandler

        def owned(what: str) -> FuncHandler:
            def uid_of(obj: dict[str, Any]) -> str | None:
                return (obj["metadata"].get("labels") or {}).get(DOMAIN_LABEL)

            def add(obj: dict[str, Any]) -> None:
                if uid := uid_of(obj):
                    self.mark(uid, what)

            def delete(obj: dict[str, Any]) -> None:
                if uid := uid_of(obj):
                    self.mark(uid, f"{what}_gone")

            return FuncHandler(add=add, update=lambda old, new: add(new), delete=delete)

        return {
            "domain": FuncHandler(
                add=self.on_domain,
                update=lambda old, new: self.on_domain(new),
                delete=lambda obj: self.mark(obj["metadata"]["uid"], "domain_gone"),
            ),
            **{what: owned(what) for what in OBJECTS},
        }


class Session:
    """The bench's client and watches on one API server, and one controller process on it."""

    def __init__(self, server: Server, api: Any, directory: Path) -> None:
        self.server = server
        self.api = api
        self.directory = directory
        self.timeline = Timeline()
        self.controller: asyncio.subprocess.Process | None = None
        self.started_at = 0.0
        self.log_path = directory / "controller.log"
        self._watches: list[asyncio.Task[None]] = []

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, server: Server, directory: Path) -> AsyncIterator[Session]:
        from computedomain.kube import errors, resources
        from computedomain.kube.client import ClientConfig, connect

        api = await connect(
            ClientConfig(kubeconfig=str(server.kubeconfig), qps=0, user_agent=BENCH_AGENT)
        )
        session = cls(server, api, directory)
        try:
            if not server.counting:
                await _install_crds(api)
            for ns in (DRIVER_NAMESPACE, USER_NAMESPACE):
                with contextlib.suppress(errors.AlreadyExists):
                    await api.create(resources.NAMESPACES, {"metadata": {"name": ns}})
            await session._watch()
            yield session
        finally:
            await session.stop_controller()
            for task in session._watches:
                task.cancel()
            await asyncio.gather(*session._watches, return_exceptions=True)
            await api.close()

    async def _watch(self) -> None:
        from computedomain.kube import resources
        from computedomain.kube.informer import Informer

        handlers = self.timeline.handlers()
        templates = f"{TARGET_LABEL}="
        informers = {
            "domain": Informer(self.api, resources.COMPUTE_DOMAINS, name="bench-cd"),
            "daemon_set": Informer(
                self.api, resources.DAEMON_SETS, label_selector=DOMAIN_LABEL, name="bench-ds"
            ),
            "daemon_template": Informer(
                self.api,
                resources.RESOURCE_CLAIM_TEMPLATES,
                label_selector=f"{templates}Daemon",
                name="bench-drct",
            ),
            "workload_template": Informer(
                self.api,
                resources.RESOURCE_CLAIM_TEMPLATES,
                label_selector=f"{templates}Workload",
                name="bench-wrct",
            ),
        }
        for what, informer in informers.items():
            informer.add_handler(handlers[what])
            self._watches.append(asyncio.create_task(informer.run()))
        for informer in informers.values():
            await informer.wait_for_sync()

    async def start_controller(self, command: list[str], extra_env: dict[str, str]) -> None:
        env = {
            **os.environ,
            "POD_NAME": "bench-controller",
            "NAMESPACE": DRIVER_NAMESPACE,
            "IMAGE_NAME": "registry.example/computedomain:bench",
            "LOG_VERBOSITY_CD_DAEMON": "1",
            "KUBECONFIG": str(self.server.kubeconfig),
            **extra_env,
        }
        with self.log_path.open("ab") as log:  # a file, never a pipe nobody drains
            self.started_at = time.monotonic()
            self.controller = await asyncio.create_subprocess_exec(
                *command, env=env, stdout=log, stderr=asyncio.subprocess.STDOUT
            )

    async def stop_controller(self) -> None:
        await _stop(self.controller)

    def log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-3000:]
        return ""

    async def until(self, condition: Callable[[], bool], what: str) -> float:
        """Poll ``condition`` until true; its time. Raises with the log if the controller
        exits or the step takes longer than :data:`STEP_TIMEOUT`."""
        deadline = time.monotonic() + STEP_TIMEOUT
        changed = self.timeline.changed
        while not condition():
            if self.controller is not None and self.controller.returncode is not None:
                msg = f"controller exited ({self.controller.returncode}) before {what}: "
                raise RuntimeError(msg + self.log_tail())
            if time.monotonic() > deadline:
                msg = f"{what}: not within {STEP_TIMEOUT} s; controller log: {self.log_tail()}"
                raise RuntimeError(msg)
            changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), 0.2)
        return time.monotonic()

    async def create(self, name: str) -> tuple[str, float]:
        """Create a domain; (its UID, the time just before the request)."""
        from computedomain.kube import resources

        body = {
            "apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "ComputeDomain",
            "metadata": {"name": name, "namespace": USER_NAMESPACE},
            "spec": {"channel": {"resourceClaimTemplate": {"name": f"{name}-channel"}}},
        }
        sent = time.monotonic()
        created = await self.api.create(resources.COMPUTE_DOMAINS, body)
        return str(created["metadata"]["uid"]), sent

    async def delete(self, name: str) -> float:
        from computedomain.kube import resources

        sent = time.monotonic()
        await self.api.delete(resources.COMPUTE_DOMAINS, name, USER_NAMESPACE)
        return sent

    async def counters(self, *, reset: bool = False) -> dict[str, Any]:
        if not self.server.counting:
            return {"items": [], "first_request": {}}
        result: dict[str, Any] = await self.api.request("DELETE" if reset else "GET", COUNTERS_PATH)
        return result

    async def settle(self, quiet: float) -> None:
        """Wait until the controller's requests have stopped for ``quiet`` seconds (on a
        server that does not count them: ``quiet`` seconds)."""
        if not self.server.counting:
            await asyncio.sleep(quiet)
            return
        last: list[dict[str, Any]] = []
        quiet_since = time.monotonic()
        deadline = quiet_since + STEP_TIMEOUT
        while time.monotonic() - quiet_since < quiet and time.monotonic() < deadline:
            rows = (await self.counters())["items"]
            if rows != last:
                last, quiet_since = rows, time.monotonic()
            await asyncio.sleep(0.1)


# -- throughput ---------------------------------------------------------------------------------


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


LIFTED = {"KUBE_API_QPS": "100000", "KUBE_API_BURST": "100000"}


async def run_throughput(
    n: int, command: list[str], extra_env: dict[str, str], plane: str
) -> dict[str, Any]:
    """One throughput run on ``plane`` (see :meth:`Server.for_plane`)."""
    with tempfile.TemporaryDirectory(prefix="cd-bench-") as tmp:
        directory = Path(tmp)
        server = await Server.for_plane(plane, directory)
        try:
            async with Session.open(server, directory) as session:
                return await _throughput(session, n, command, {**LIFTED, **extra_env})
        finally:
            await server.stop()


async def _throughput(
    session: Session, n: int, command: list[str], env: dict[str, str]
) -> dict[str, Any]:
    await session.start_controller(command, env)
    assert session.controller is not None
    pid = session.controller.pid
    peak = [0.0]
    stop_sampling = asyncio.Event()
    sampler = asyncio.create_task(_sample_rss(pid, peak, stop_sampling))
    timeline = session.timeline
    try:
        warm, _ = await session.create("warm-up")  # the controller serves once this is done
        await session.until(lambda: timeline.done(warm), "the warm-up domain reconciled")
        await asyncio.sleep(0.5)
        await session.counters(reset=True)
        rss_before = peak[0]
        server_pid = session.server.pid
        cpu_before = (_cpu(pid), _cpu(server_pid) if server_pid else 0.0)
        started = time.monotonic()
        created = await asyncio.gather(*(session.create(f"cd-{i:05d}") for i in range(n)))
        created_at = time.monotonic() - started
        uids = [uid for uid, _ in created]
        with contextlib.suppress(RuntimeError):  # a timeout still reports what was reconciled
            await session.until(lambda: all(timeline.done(u) for u in uids), "all reconciled")
        elapsed = time.monotonic() - started
        cpu = (
            _cpu(pid) - cpu_before[0],
            (_cpu(server_pid) - cpu_before[1]) if server_pid else 0.0,
        )
        reconciled = sum(1 for u in uids if timeline.done(u))
        await session.settle(2.0)
        rows = (await session.counters())["items"]
    finally:
        stop_sampling.set()
        await sampler
    return _throughput_report(
        n=n,
        counted=session.server.counting,
        command=command,
        elapsed=elapsed,
        created_at=created_at,
        reconciled=reconciled,
        rows=rows,
        peak_rss=peak[0],
        rss_before=rss_before,
        cpu=cpu,
    )


def _requests(rows: list[dict[str, Any]]) -> tuple[Counter[str], Counter[str], int, int, int]:
    """(count by verb, count by "verb resource code", writes, writes without events, 409s)."""
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
    return by_verb, by_request, writes, writes_no_events, conflicts


def _throughput_report(
    *,
    n: int,
    counted: bool,
    command: list[str],
    elapsed: float,
    created_at: float,
    reconciled: int,
    rows: list[dict[str, Any]],
    peak_rss: float,
    rss_before: float,
    cpu: tuple[float, float],
) -> dict[str, Any]:
    by_verb, by_request, writes, writes_no_events, conflicts = _requests(rows)
    per_domain = {verb: round(count / n, 3) for verb, count in sorted(by_verb.items())}
    result: dict[str, Any] = {
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
    result["targets_met"] = {"peak_rss_mb": peak_rss <= TARGETS["peak_rss_mb"]}
    if counted:
        met = result["writes_per_domain"] <= TARGETS["writes_per_domain"]
        result["targets_met"]["writes_per_domain"] = met
    else:  # a server that does not count: no request figures rather than zeros
        for key in (
            "requests_per_domain_by_verb",
            "writes_per_domain",
            "writes_per_domain_with_events",
            "conflicts_per_domain",
            "requests",
        ):
            result[key] = None  # fmt: skip
    if n >= 1000:
        result["targets_met"]["seconds_for_1000"] = elapsed <= TARGETS["seconds_for_1000"]
    return result


# -- latency ------------------------------------------------------------------------------------


def _since(seen: dict[str, float], start: float, names: tuple[str, ...]) -> dict[str, float]:
    """Seconds from ``start`` to each of ``names`` in ``seen``, and to the last of them."""
    figures = {name: round(seen[name] - start, 4) for name in names}
    figures["all"] = max(figures.values())
    return figures


async def _one_domain(session: Session, name: str, settle: float) -> dict[str, dict[str, float]]:
    """On an idle controller, create a domain and wait until reconciled; once the controller
    is idle again, delete it and wait until gone. The figures."""
    timeline = session.timeline
    await session.settle(settle)
    uid, created = await session.create(name)
    await session.until(lambda: timeline.done(uid), f"domain {name} reconciled")
    await session.settle(settle)
    deleted = await session.delete(name)
    await session.until(lambda: timeline.gone(uid), f"domain {name} gone")
    seen = timeline.seen[uid]
    return {
        "create": _since(seen, created, RECONCILED),
        "delete": _since(seen, deleted, GONE),
    }


async def _startup(session: Session, command: list[str], env: dict[str, str]) -> dict[str, Any]:
    """A domain exists, the controller starts: the time to its first request, to that domain
    reconciled, and then from the domain's delete to gone."""
    timeline = session.timeline
    uid, _ = await session.create("before-start")
    await session.counters(reset=True)
    await session.start_controller(command, env)
    started = session.started_at
    await session.until(lambda: timeline.done(uid), "the existing domain reconciled")
    first = (await session.counters())["first_request"]
    deleted = await session.delete("before-start")
    await session.until(lambda: timeline.gone(uid), "the existing domain gone")
    seen = timeline.seen[uid]
    return {
        "process_start_to_first_request_s": (
            round(min(first.values()) - started, 4) if first else None
        ),
        "process_start_to_existing_domain_reconciled_s": _since(seen, started, RECONCILED)["all"],
        "first_delete_to_gone_s": _since(seen, deleted, GONE)["all"],
    }


def _median_counts(
    rounds: list[Counter[str]], key: Callable[[str], str]
) -> dict[str, float] | None:
    """The median count of each ``key(request)`` over the rounds (None: nothing counted)."""
    per_round = []
    for counted in rounds:
        keyed: Counter[str] = Counter()
        for request, n in counted.items():
            keyed[key(request)] += n
        per_round.append(keyed)
    names = sorted(set().union(*per_round))
    if not names:
        return None
    return {name: statistics.median(c.get(name, 0) for c in per_round) for name in names}


def _summary(rounds: list[dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Median, min and max of every figure over the rounds."""
    summary: dict[str, Any] = {}
    for phase in ("create", "delete"):
        summary[phase] = {}
        for name in rounds[0][phase]:
            values = [r[phase][name] for r in rounds]
            summary[phase][name] = {
                "median": round(statistics.median(values), 4),
                "min": min(values),
                "max": max(values),
            }
    return summary


@dataclasses.dataclass(frozen=True)
class LatencyPlan:
    """How the latency mode runs: the controllers' extra environment, the rounds, the quiet
    time before each round, and the API server (see :meth:`Server.for_plane`: ``embedded``, an
    embedded one per command; ``kube``, a real control plane per command; else a kubeconfig)."""

    extra_env: dict[str, str]
    rounds: int
    settle: float
    plane: str = "embedded"


async def run_latency(commands: list[list[str]], plan: LatencyPlan) -> list[dict[str, Any]]:
    """Start-up, then ``rounds`` single-domain rounds, for each command; interleaved when each
    command has an embedded server of its own, else one command after another."""
    groups = [commands] if plan.plane == "embedded" else [[c] for c in commands]
    results = []
    for group in groups:
        results.extend(await _latency_group(group, plan))
    return results


async def _latency_group(commands: list[list[str]], plan: LatencyPlan) -> list[dict[str, Any]]:
    rounds, settle, extra_env = plan.rounds, plan.settle, plan.extra_env
    async with contextlib.AsyncExitStack() as stack:
        sessions = []
        for _ in commands:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cd-bench-")))
            server = await Server.for_plane(plan.plane, directory)
            stack.push_async_callback(server.stop)
            sessions.append(await stack.enter_async_context(Session.open(server, directory)))
        startups = []
        for session, command in zip(sessions, commands, strict=True):  # one start at a time
            startups.append(await _startup(session, command, extra_env))
        figures: list[list[dict[str, dict[str, float]]]] = [[] for _ in commands]
        requests: list[list[Counter[str]]] = [[] for _ in commands]
        for index in range(rounds):
            for position, session in enumerate(sessions):
                await session.counters(reset=True)
                figures[position].append(await _one_domain(session, f"round-{index}", settle))
                await session.settle(min(settle, 0.5))
                by_request = _requests((await session.counters())["items"])[1]
                requests[position].append(by_request)
    return [
        {
            "controller_cmd": shlex.join(command),
            "control_plane": plan.plane,
            "startup": startup,
            "rounds": len(done),
            "seconds": _summary(done),
            "requests_per_round_by_verb": _median_counts(counted, lambda r: r.split()[0]),
            "requests_per_round": _median_counts(counted, lambda r: r),
            "each_round": done,
        }
        for command, startup, done, counted, session in zip(
            commands, startups, figures, requests, sessions, strict=True
        )
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--domains", default="100,1000", help="comma-separated N values")
    parser.add_argument(
        "--controller-cmd",
        action="append",
        help="a controller command line (gets upstream's env: KUBECONFIG, NAMESPACE, ...); "
        "repeat to compare (latency mode); default: this environment's cd-controller",
    )
    parser.add_argument("--workers", default="", help="WORKERS env for the controller (ours)")
    parser.add_argument(
        "--control-plane",
        help="the control planes to measure on, comma separated: embedded (the default: an "
        "embedded API server per run, counting requests), kube (a real control plane per run, "
        "make kube-bins)",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        help="use the API server of this kubeconfig (any URL) instead (no --control-plane)",
    )
    parser.add_argument("--latency", action="store_true", help="single-domain latency mode")
    parser.add_argument("--rounds", type=int, default=5, help="latency rounds per controller")
    parser.add_argument(
        "--settle",
        type=float,
        default=2.0,
        help="seconds a controller's requests must have stopped before each latency round",
    )
    parser.add_argument("--qps", help="KUBE_API_QPS for the controllers (latency mode)")
    parser.add_argument("--burst", help="KUBE_API_BURST for the controllers (latency mode)")
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return 0
    commands = [
        shlex.split(c)
        for c in args.controller_cmd or [str(Path(sys.executable).with_name("cd-controller"))]
    ]
    try:
        planes = control_planes(args.control_plane, args.kubeconfig)
    except ValueError as exc:
        parser.error(str(exc))
    extra = {"WORKERS": args.workers} if args.workers else {}
    by_plane: dict[str, dict[str, list[dict[str, Any]]]] = {}
    if args.latency:
        if args.rounds < 1:
            parser.error("--rounds: at least 1")
        limits = {"KUBE_API_QPS": args.qps, "KUBE_API_BURST": args.burst}
        extra.update({k: v for k, v in limits.items() if v})
        for plane in planes:
            plan = LatencyPlan(extra, args.rounds, args.settle, plane)
            by_plane[plane] = {"runs": asyncio.run(run_latency(commands, plan))}
        document = {"benchmark": "controller-latency", "control_planes": by_plane}
        print(json.dumps(document, indent=2))
        return 0
    for plane in planes:
        by_plane[plane] = {
            "runs": [
                asyncio.run(run_throughput(int(n), command, extra, plane))
                for command in commands
                for n in args.domains.split(",")
                if n.strip()
            ]
        }
    document = {"benchmark": "controller", "targets": TARGETS, "control_planes": by_plane}
    print(json.dumps(document, indent=2))
    return 0


PLANES = ("embedded", "kube")


def control_planes(text: str | None, kubeconfig: Path | None) -> list[str]:
    """The control planes of ``--control-plane`` (each once, in order; default ``embedded``),
    or the kubeconfig's path alone. Raises ValueError naming the flag."""
    if kubeconfig is not None:
        if text is not None:
            msg = "--kubeconfig: names the one API server to use; drop --control-plane"
            raise ValueError(msg)
        return [str(kubeconfig)]
    names = list(dict.fromkeys(n.strip() for n in (text or "embedded").split(",")))
    unknown = [n for n in names if n not in PLANES]
    if unknown:
        msg = f"--control-plane: {unknown[0]!r} is not a control plane ({', '.join(PLANES)})"
        raise ValueError(msg)
    return names


if __name__ == "__main__":
    raise SystemExit(main())
