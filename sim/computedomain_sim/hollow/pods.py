"""A hollow kubelet's pod worker: prepare the pod's claims over the plugin's gRPC socket, "run"
its containers, report its status, and on deletion unprepare and remove it.

Called by :mod:`.kubelet`, one per pod bound to the node. The claim handling is the simulated
kubelet's own (:class:`computedomain_sim.kubelet.dra.DraManager`: GET each claim, check it is
allocated and reserved, one NodePrepareResources call per driver, NodeUnprepareResources when
the last user is gone). No process is started: a workload container is Running and Ready as
soon as its claims are prepared; a daemon container (``cd-imex-daemon run``) runs the daemon's
logic in-process (:mod:`.daemon`) and is Ready once its stand-in IMEX is. Status is written by
merge patch of the status subresource, only when it changed (as the kubelet's status manager).
Termination (a deletionTimestamp): stop the daemon (it deregisters), unprepare, delete with
grace 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import Mapping
from typing import Any

import attrs

from computedomain.api.errors import ConfigError
from computedomain.kube import errors
from computedomain.kube.events import timestamp
from computedomain.kube.resources import PODS
from computedomain.kube.rest import Api
from computedomain.runtime import logs
from computedomain_sim.kubelet import cdi, launch
from computedomain_sim.kubelet.claims import ClaimNotReady, cdi_ids_for_container
from computedomain_sim.kubelet.dra import DraManager, PreparedClaims, PrepareFailed
from computedomain_sim.kubelet.paths import NodePaths
from computedomain_sim.kubelet.status import ContainerRecord, State, pod_status

from .daemon import HollowImexDaemon, daemon_settings, is_daemon_container

__all__ = ["HollowPod", "NodeContext"]

_log = logs.get_logger(__name__)
Obj = Mapping[str, Any]
RETRY_MIN = 0.2
RETRY_MAX = 5.0


@attrs.frozen
class NodeContext:
    """What a pod worker needs from its node."""

    name: str
    address: str
    paths: NodePaths
    api: Api  # the kubelet's client
    daemon_api: Api  # the daemons' client
    dra: DraManager
    node_env: Mapping[str, str]


class HollowPod:
    """One pod on a hollow node. :meth:`update` with every change; :meth:`run` until done."""

    def __init__(self, node: NodeContext, pod: Obj, pod_ip: str) -> None:
        self.node = node
        self.pod = pod
        self.pod_ip = pod_ip
        self.uid = str(pod["metadata"]["uid"])
        self.daemon: HollowImexDaemon | None = None
        self._wake = asyncio.Event()
        self._terminate = asyncio.Event()
        self._vanished = False
        self._last_status: dict[str, Any] | None = None
        self._started_at = timestamp(time.time())
        self._message = "ContainerCreating"

    def update(self, pod: Obj) -> None:
        self.pod = pod
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            self._terminate.set()
        self._wake.set()

    def vanished(self) -> None:
        """The pod is gone from the API (force delete): stop without deleting it."""
        self._vanished = True
        self._terminate.set()
        self._wake.set()

    async def run(self) -> None:
        """Prepare, start, report; on termination tear down. Cancel to abandon."""
        prepared = await self._prepare()
        if prepared is not None:
            try:
                await self._start(prepared)
            except (ConfigError, launch.LaunchError, cdi.CdiError, errors.ApiError) as exc:
                self._message = f"cannot start the container: {exc}"
                _log.warning("hollow pod start failed", pod=self._name(), error=str(exc))
                await self._report(running=False, ready=False)
            else:
                await self._until_terminated()
        await self._teardown()

    def _name(self) -> str:
        meta = self.pod.get("metadata") or {}
        return f"{meta.get('namespace')}/{meta.get('name')}"

    async def _prepare(self) -> PreparedClaims | None:
        attempt = 0
        while not self._terminate.is_set():
            try:
                return await self.node.dra.prepare(self.pod)
            except (ClaimNotReady, PrepareFailed, errors.ApiError) as exc:
                if str(exc) != self._message:
                    self._message = str(exc)
                attempt += 1
                delay = min(RETRY_MAX, RETRY_MIN * 2 ** min(attempt, 6))
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
        return None

    async def _start(self, prepared: PreparedClaims) -> None:
        containers = (self.pod.get("spec") or {}).get("containers") or []
        daemon = next((c for c in containers if is_daemon_container(c)), None)
        if daemon is None:
            await self._report(running=True, ready=True)
            return
        ids = cdi_ids_for_container(daemon, prepared.claims, prepared.devices)
        registry = await asyncio.to_thread(cdi.load_dir, self.node.paths.cdi_dir)
        pod_dir = self.node.paths.pod_dir(self.uid)
        ctx = launch.PodContext(
            pod=self.pod,
            node_name=self.node.name,
            host_ip=self.node.address,
            pod_ip=self.pod_ip,
            pod_dir=pod_dir,
            paths=self.node.paths,
            isolation=launch.Isolation.PATHMAP,
            node_env=self.node.node_env,
        )
        settings = daemon_settings(daemon, ctx, cdi.resolve(registry, ids))
        self.daemon = HollowImexDaemon(self.node.daemon_api, settings, pod_dir / "imex")
        await self._report(running=True, ready=False)
        await self.daemon.start()
        ready = asyncio.ensure_future(self.daemon.imex_ready.wait())
        stop = asyncio.ensure_future(self._terminate.wait())
        try:
            await asyncio.wait([ready, stop], return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
            stop.cancel()
        if self.daemon.imex_ready.is_set() and not self._terminate.is_set():
            await self._report(running=True, ready=True)

    async def _until_terminated(self) -> None:
        await self._terminate.wait()

    async def _report(self, *, running: bool, ready: bool) -> None:
        if self._vanished:
            return
        now = timestamp(time.time())
        records = [
            ContainerRecord(
                name=str(c.get("name", "")),
                image=str(c.get("image", "")),
                state=State.RUNNING if running else State.WAITING,
                reason="" if running else "ContainerCreating",
                message="" if running else self._message,
                started_at=self._started_at if running else None,
                started=running,
                ready=ready,
            )
            for c in (self.pod.get("spec") or {}).get("containers") or []
        ]
        status = pod_status(
            self.pod,
            (),
            records,
            pod_ip=self.pod_ip,
            host_ip=self.node.address,
            start_time=self._started_at,
            now=now,
        )
        if status == self._last_status:
            return
        meta = self.pod["metadata"]
        with contextlib.suppress(errors.NotFound):
            await self.node.api.patch(
                PODS,
                meta["name"],
                {"status": status},
                namespace=meta["namespace"],
                subresource="status",
            )
        self._last_status = status

    async def _teardown(self) -> None:
        if self.daemon is not None:
            await self.daemon.stop()
        delay = 0
        while True:
            try:
                await self.node.dra.unprepare(self.uid)
                break
            except PrepareFailed as exc:
                delay += 1
                _log.warning("hollow unprepare failed", pod=self._name(), error=str(exc))
                await asyncio.sleep(min(RETRY_MAX, RETRY_MIN * 2**delay))
        shutil.rmtree(self.node.paths.pod_dir(self.uid), ignore_errors=True)
        if not self._vanished:
            meta = self.pod["metadata"]
            with contextlib.suppress(errors.NotFound, errors.Conflict):
                await self.node.api.delete(
                    PODS, meta["name"], meta["namespace"], uid=self.uid, grace_period_seconds=0
                )
