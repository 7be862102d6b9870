"""A simulated kubelet: one node's Node object, plugins, pods and their processes.

Created by :mod:`computedomain_sim.cluster` (many per process, each with its own tasks). It
registers the Node (:mod:`.node`), deletes the node's leftover ResourceSlices (as a starting
kubelet does), watches the registry directory for DRA plugins (:mod:`.plugins`), watches the
pods bound to its node (an informer with ``spec.nodeName=<node>``) and runs a
:class:`.podworker.PodWorker` per pod. :meth:`Kubelet.reboot` is the fault tests' node reboot:
every process is killed, a new boot id is written, the CDI directory is wiped, plugin
registrations and prepared claims are forgotten, and the pods are started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from computedomain.kube import errors
from computedomain.kube.events import EventRecorder
from computedomain.kube.informer import FuncHandler, Informer
from computedomain.kube.resources import PODS, RESOURCE_SLICES
from computedomain.kube.rest import Api
from computedomain.runtime import logs
from computedomain.runtime.clock import REAL_CLOCK, Clock

from .dra import DraManager
from .ips import AddressBlock
from .launch import Image, Isolation
from .node import NodeAgent, NodeConfig
from .paths import NodePaths
from .plugins import PluginManager
from .podworker import KubeletContext, PodWorker
from .restarts import Backoff

__all__ = ["Kubelet", "KubeletSettings"]

_log = logs.get_logger(__name__)
Obj = Mapping[str, Any]


RESTART_BACKOFF = Backoff(base=1.0, cap=30.0, reset_after=120.0)
RETRY_BACKOFF = Backoff(base=0.5, cap=8.0, reset_after=60.0)


@attrs.frozen
class KubeletSettings:
    """Timings. The kubelet's own values where the simulation can afford them; restart and
    retry back-off are shorter than the kubelet's 10 s..300 s so that scenarios finish fast."""

    heartbeat: float = 10.0
    plugin_scan: float = 0.2
    wiping_delay: float = 30.0
    call_deadline: float = 45.0
    restart_backoff: Backoff = RESTART_BACKOFF
    retry_backoff: Backoff = RETRY_BACKOFF


class Kubelet:
    """One node."""

    def __init__(
        self,
        api: Api,
        node: NodeConfig,
        paths: NodePaths,
        *,
        addresses: AddressBlock,
        image: Image,
        isolation: Isolation,
        events: EventRecorder,
        server_url: str,
        pid_dir: Path | None,
        settings: KubeletSettings | None = None,
        clock: Clock | None = None,
        server_ca: bytes | None = None,
    ) -> None:
        settings = settings or KubeletSettings()
        clock = clock or REAL_CLOCK
        self.api = api
        self.name = node.name
        self.agent = NodeAgent(api, node, paths, heartbeat=settings.heartbeat, clock=clock)
        self.plugins = PluginManager(
            paths,
            on_change=self._plugins_changed,
            on_gone=self._wipe_slices,
            scan_interval=settings.plugin_scan,
            wiping_delay=settings.wiping_delay,
            clock=clock,
        )
        self.ctx = KubeletContext(
            api=api,
            node=node,
            paths=paths,
            addresses=addresses,
            image=image,
            isolation=isolation,
            dra=DraManager(api, self.plugins, deadline=settings.call_deadline),
            events=events,
            clock=clock,
            server_url=server_url,
            pid_dir=pid_dir,
            backoff=settings.restart_backoff,
            retry=settings.retry_backoff,
            server_ca=server_ca,
        )
        selector = f"spec.nodeName={self.name}"
        self.pods = Informer(api, PODS, field_selector=selector, name=f"kubelet-{self.name}")
        self.pods.add_handler(
            FuncHandler(add=self._pod, update=lambda _o, n: self._pod(n), delete=self._gone)
        )
        self.workers: dict[str, PodWorker] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._ready = asyncio.Event()

    async def run(self) -> None:
        """Register the node and run until cancelled; on the way out every process is killed."""
        self.ctx.paths.create()
        await self.agent.register()
        await self._wipe_slices(None)
        background = [
            asyncio.ensure_future(self.agent.run()),
            asyncio.ensure_future(self.plugins.run()),
            asyncio.ensure_future(self.pods.run()),
        ]
        try:
            await self.pods.wait_for_sync()
            self._ready.set()
            await asyncio.gather(*background)
        finally:
            for task in background:
                task.cancel()
            await self._abandon_all()

    async def wait_ready(self) -> None:
        """Wait until the node is registered and its pod informer synced."""
        await self._ready.wait()

    # -- pods ------------------------------------------------------------------------------

    def _pod(self, pod: Obj) -> None:
        uid = str(pod["metadata"]["uid"])
        worker = self.workers.get(uid)
        if worker is None:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return  # finished before this kubelet started: nothing to run
            self._start(pod, None)
        else:
            worker.update(pod)

    def _gone(self, pod: Obj) -> None:
        worker = self.workers.get(str(pod["metadata"]["uid"]))
        if worker is not None:
            worker.vanished()

    def _start(self, pod: Obj, restarts_before: Mapping[str, int] | None) -> None:
        uid = str(pod["metadata"]["uid"])
        worker = PodWorker(self.ctx, pod, restarts_before)
        self.workers[uid] = worker
        worker.update(pod)

        async def run() -> None:
            try:
                await worker.run()
            except Exception:
                _log.exception("pod worker failed", pod=pod["metadata"].get("name"), node=self.name)
            # A completed pod's worker stays, so the pod is not started again.
            if not worker.finished and self.workers.get(uid) is worker and not worker.abandoned:
                del self.workers[uid]

        self._tasks[uid] = asyncio.ensure_future(run())

    async def _abandon_all(self) -> set[str]:
        """Abandon every worker, those started while waiting included; their pod UIDs."""
        abandoned: set[str] = set()
        while self._tasks:
            for worker in self.workers.values():
                worker.abandoned = True
            abandoned.update(self._tasks)
            tasks = list(self._tasks.values())
            self._tasks.clear()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return abandoned

    def _plugins_changed(self) -> None:
        for worker in self.workers.values():
            worker.update(worker.pod)  # wake workers waiting for a driver

    async def _wipe_slices(self, driver: str | None) -> None:
        """Delete this node's ResourceSlices (of ``driver``, or all)."""
        selector = f"spec.nodeName={self.name}" + (f",spec.driver={driver}" if driver else "")
        with contextlib.suppress(errors.ApiError):
            items, _ = await self.api.list_all(RESOURCE_SLICES, field_selector=selector)
            for item in items:
                with contextlib.suppress(errors.NotFound):
                    await self.api.delete(RESOURCE_SLICES, item["metadata"]["name"])

    # -- faults ----------------------------------------------------------------------------

    async def reboot(self) -> None:
        """Kill every process, new boot id, empty CDI dir, forget plugins and claims, restart
        the pods (their restart counts go up, as after a real reboot)."""
        counts = {uid: w.restart_counts for uid, w in self.workers.items() if not w.finished}
        started_meanwhile = await self._abandon_all() - set(counts)
        # From here to the restarts nothing awaits: an informer event in between would find no
        # worker and start a second one for the same pod (two plugin processes, one orphaned).
        self.workers.clear()
        self.agent.new_boot()
        shutil.rmtree(self.ctx.paths.cdi_dir, ignore_errors=True)
        self.ctx.paths.cdi_dir.mkdir(parents=True, exist_ok=True)
        self.plugins.forget_all()
        self.ctx.dra.forget_all()
        for pod in self.pods.store.list():
            uid = str(pod["metadata"]["uid"])
            if uid in counts:  # a terminating pod's new worker just finishes its deletion
                self._start(pod, {name: n + 1 for name, n in counts[uid].items()})
            elif uid in started_meanwhile:
                self._start(pod, None)
        with contextlib.suppress(errors.ApiError):
            await self.agent.beat()  # the Node shows the new boot id at once

    async def set_ready(self, ready: bool) -> None:
        """Mark the Node Ready or NotReady now (a failing node, for fault tests)."""
        self.agent.ready = ready
        await self.agent.beat()
