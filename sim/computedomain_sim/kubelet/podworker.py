"""One pod's life on a simulated node, from binding to deletion.

Created by :mod:`.kubelet` for each pod bound to its node and fed every update of the pod. The
worker gives the pod an address, its service account kubeconfig (:mod:`.tokens`) and files
(:mod:`.volumes`), prepares its claims (:mod:`.dra`, retried with back-off while the driver or
the claim is not ready, reporting FailedPrepareDynamicResources with the plugin's words), runs
the init containers one after the other and then the containers (:mod:`.containers`, with CDI
edits from :mod:`.cdi` applied through :mod:`.launch`), and writes the pod status whenever
something changed (:mod:`.status`).

It ends when the pod gets a deletionTimestamp (containers get SIGTERM and, after the grace
period, SIGKILL; claims are unprepared; then the pod is deleted with grace 0, as the kubelet
does), when the pod vanishes from the API (a force delete: processes are killed at once), when
the pod completes (``restartPolicy`` Never/OnFailure), or when it is abandoned: the node
reboots or the kubelet stops (processes are killed, nothing is unprepared or deleted; after a
reboot a new worker takes over).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from computedomain.kube import errors
from computedomain.kube.events import EventRecorder
from computedomain.kube.resources import PODS
from computedomain.kube.rest import Api
from computedomain.runtime import logs
from computedomain.runtime.clock import Clock

from . import cdi, claims, launch, restarts, tokens, volumes
from .containers import ContainerRunner, rfc3339
from .dra import DraManager, PreparedClaims, PrepareFailed
from .ips import AddressBlock
from .node import NodeConfig
from .paths import NodePaths
from .status import State, pod_status

__all__ = ["KubeletContext", "PodWorker"]

_log = logs.get_logger(__name__)
Obj = Mapping[str, Any]


@attrs.frozen
class KubeletContext:
    """What every pod worker of one node shares."""

    api: Api
    node: NodeConfig
    paths: NodePaths
    addresses: AddressBlock
    image: launch.Image
    isolation: launch.Isolation
    dra: DraManager
    events: EventRecorder
    clock: Clock
    server_url: str
    pid_dir: Path | None
    backoff: restarts.Backoff
    retry: restarts.Backoff  # prepare, volumes and token retries
    server_ca: bytes | None = None  # the HTTPS API server's CA (PEM); None for plain HTTP


class PodWorker:
    """Runs one pod; see the module docstring."""

    def __init__(
        self, ctx: KubeletContext, pod: Obj, restarts_before: Mapping[str, int] | None = None
    ) -> None:
        self.ctx = ctx
        self.pod: Obj = pod
        self.uid = str(pod["metadata"]["uid"])
        self.restarts_before = dict(restarts_before or {})
        self.init_runners: list[ContainerRunner] = []
        self.runners: list[ContainerRunner] = []
        self.pod_ip = ""
        self.start_time = rfc3339(ctx.clock.time())
        self.abandoned = False
        self.finished = False
        self._grace: float | None = None
        self._vanished = False
        self._terminate = asyncio.Event()
        self._changed = asyncio.Event()
        self._dirty = asyncio.Event()
        self._last_status: dict[str, Any] | None = None
        self._kills: set[asyncio.Future[None]] = set()
        self._container_tasks: list[asyncio.Future[None]] = []
        self._token: str | None = None
        self._in_cluster: launch.InCluster | None = None
        self._waiting_message = ""

    # -- inputs from the kubelet -----------------------------------------------------------

    def update(self, pod: Obj) -> None:
        """A newer version of the pod from the informer."""
        self.pod = pod
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            self.request_termination(float(meta.get("deletionGracePeriodSeconds") or 0))
        self._changed.set()

    def vanished(self) -> None:
        """The pod is gone from the API (force delete): kill at once."""
        self._vanished = True
        self.request_termination(0.0)

    def request_termination(self, grace: float) -> None:
        """Stop the pod with ``grace`` seconds (a shorter later request wins)."""
        if self._grace is None or grace < self._grace:
            self._grace = grace
            if grace <= 0:
                for runner in [*self.init_runners, *self.runners]:
                    task = asyncio.ensure_future(runner.stop(0))
                    self._kills.add(task)
                    task.add_done_callback(self._kills.discard)
        self._terminate.set()
        self._changed.set()

    @property
    def restart_counts(self) -> dict[str, int]:
        return {r.record.name: r.record.restart_count for r in [*self.init_runners, *self.runners]}

    # -- the pod's life --------------------------------------------------------------------

    async def run(self) -> None:
        """Run the pod to its end. Returns when the worker is done (see module docstring)."""
        writer = asyncio.ensure_future(self._status_loop())
        try:
            await self._start_and_supervise()
        finally:
            try:
                await self._teardown()
            finally:
                writer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await writer

    async def _start_and_supervise(self) -> None:
        spec = self.pod.get("spec") or {}
        policy = str(spec.get("restartPolicy") or "Always")
        self.pod_ip = (
            self.ctx.node.address if spec.get("hostNetwork") else self.ctx.addresses.pod_address()
        )
        pod_dir = self.ctx.paths.pod_dir(self.uid)
        grace = float(spec.get("terminationGracePeriodSeconds", 30))
        self.init_runners = [
            self._runner(c, "Never" if policy == "Never" else "OnFailure", grace)
            for c in spec.get("initContainers") or []
        ]
        self.runners = [self._runner(c, policy, grace) for c in spec.get("containers") or []]
        self._dirty.set()
        kubeconfig = await self._retry("FailedMount", self._kubeconfig)
        if kubeconfig is _STOP:
            return
        context = self._context(kubeconfig if isinstance(kubeconfig, Path) else None)
        sources = await self._retry("FailedMount", lambda: self._volumes(context, pod_dir))
        if sources is _STOP:
            return
        prepared = await self._retry("FailedPrepareDynamicResources", self._prepare)
        if not isinstance(prepared, PreparedClaims):
            return
        self._waiting_message = ""
        for runner in self.init_runners:
            runner.make_spec = self._spec_factory(runner, context, prepared, sources)
            task = asyncio.ensure_future(runner.run())
            self._container_tasks.append(task)
            if not await self._until_done_or_terminated([task]):
                return
            if runner.record.exit_code != 0:
                self.finished = True
                return
        tasks = []
        for runner in self.runners:
            runner.make_spec = self._spec_factory(runner, context, prepared, sources)
            tasks.append(asyncio.ensure_future(runner.run()))
        self._container_tasks.extend(tasks)
        if await self._until_done_or_terminated(tasks):
            self.finished = True  # every container ended for good: the pod completed

    async def _until_done_or_terminated(self, tasks: Sequence[asyncio.Future[None]]) -> bool:
        """True when all ``tasks`` ended by themselves, False on a termination request."""
        stop: asyncio.Future[Any] = asyncio.ensure_future(self._terminate.wait())
        everything: asyncio.Future[Any] = asyncio.gather(*tasks)
        # The containers may outlive this wait (teardown stops them); whatever the gathering
        # ends with then is collected here rather than reported as never retrieved.
        everything.add_done_callback(_collect)
        try:
            await asyncio.wait([stop, everything], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        return all(t.done() for t in tasks) and not self._terminate.is_set()

    async def _teardown(self) -> None:
        grace = self._grace if self._grace is not None else 0.0
        if self.abandoned:
            grace = 0.0
        if self._terminate.is_set() and not self._vanished and not self.abandoned:
            names = ", ".join(r.record.name for r in self.runners)
            self.ctx.events.event(
                dict(self.pod), "Normal", "Killing", f"Stopping container(s) {names}"
            )
        await asyncio.gather(*(r.stop(grace) for r in [*self.init_runners, *self.runners]))
        for task in self._container_tasks:
            task.cancel()
        await asyncio.gather(*self._container_tasks, return_exceptions=True)
        self._dirty.set()
        if self.pod_ip and self.pod_ip != self.ctx.node.address:
            self.ctx.addresses.release_pod_address(self.pod_ip)
        if self.abandoned:
            return
        await self._flush_status()
        delay = 0
        while True:
            try:
                await self.ctx.dra.unprepare(self.uid)
                break
            except PrepareFailed as exc:
                self._event("Warning", "FailedUnprepareDynamicResources", str(exc))
                delay += 1
                await self.ctx.clock.sleep(self.ctx.retry.delay(delay))
        if self._terminate.is_set():
            # The pod's files go with it (its logs stay under /var/log/pods).
            shutil.rmtree(self.ctx.paths.pod_dir(self.uid), ignore_errors=True)
        if self._terminate.is_set() and not self._vanished:
            meta = self.pod["metadata"]
            with contextlib.suppress(errors.NotFound, errors.Conflict):
                await self.ctx.api.delete(
                    PODS, meta["name"], meta["namespace"], uid=self.uid, grace_period_seconds=0
                )

    # -- steps -----------------------------------------------------------------------------

    async def _retry(self, reason: str, step: Any) -> Any:
        """Run ``step`` until it succeeds; on a known failure report ``reason`` and back off.
        Returns the step's result, or ``_STOP`` when the pod is being terminated."""
        attempt = 0
        while not self._terminate.is_set():
            try:
                return await step()
            except (
                claims.ClaimNotReady,
                PrepareFailed,
                volumes.VolumeError,
                launch.LaunchError,
                errors.ApiError,
                OSError,
            ) as exc:
                message = str(exc)
                attempt += 1
                if message != self._waiting_message:
                    self._waiting_message = message
                    self._dirty.set()
                if reason == "FailedPrepareDynamicResources" and isinstance(
                    exc, claims.ClaimNotReady
                ):
                    _log.info(
                        "waiting for claims", pod=self.pod["metadata"]["name"], reason=message
                    )
                else:
                    self._event("Warning", reason, _event_message(reason, message))
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.ctx.retry.delay(attempt)):
                        await self._changed.wait()
        return _STOP

    async def _kubeconfig(self) -> Path | None:
        spec = self.pod.get("spec") or {}
        if spec.get("automountServiceAccountToken") is False:
            return None
        path = self.ctx.paths.pod_dir(self.uid) / "kubeconfig"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._token = await tokens.write_pod_kubeconfig(
                self.ctx.api, self.pod, self.ctx.server_url, path, self.ctx.server_ca
            )
        except errors.NotFound:
            if (spec.get("serviceAccountName") or "default") == "default":
                return None  # nobody made the namespace's default account: run without one
            raise
        server = urllib.parse.urlsplit(self.ctx.server_url)
        if self.ctx.server_ca is not None and server.scheme == "https" and server.hostname:
            directory = path.with_name("serviceaccount")
            namespace = str((self.pod.get("metadata") or {}).get("namespace", "default"))
            await tokens.write_service_account(
                directory, self._token, namespace, self.ctx.server_ca
            )
            port = server.port or 443
            self._in_cluster = launch.InCluster(directory, server.hostname, port)
        return path

    async def _volumes(self, context: launch.PodContext, pod_dir: Path) -> Mapping[str, Path]:
        sources = launch.volume_sources(self.pod, context)
        volumes.prepare_pod_files(
            self.pod, pod_dir, self.pod_ip, sources, token=self._token, ca_pem=self.ctx.server_ca
        )
        return sources

    async def _prepare(self) -> PreparedClaims:
        return await self.ctx.dra.prepare(self.pod)

    def _context(self, kubeconfig: Path | None) -> launch.PodContext:
        return launch.PodContext(
            pod=self.pod,
            node_name=self.ctx.node.name,
            host_ip=self.ctx.node.address,
            pod_ip=self.pod_ip,
            pod_dir=self.ctx.paths.pod_dir(self.uid),
            paths=self.ctx.paths,
            isolation=self.ctx.isolation,
            node_env=self.ctx.node.env,
            kubeconfig=kubeconfig,
            in_cluster=self._in_cluster if kubeconfig is not None else None,
        )

    def _spec_factory(
        self,
        runner: ContainerRunner,
        context: launch.PodContext,
        prepared: PreparedClaims,
        sources: Mapping[str, Path],
    ) -> Any:
        def make() -> launch.LaunchSpec:
            ids = claims.cdi_ids_for_container(runner.container, prepared.claims, prepared.devices)
            try:
                edits = (
                    cdi.resolve(cdi.load_dir(self.ctx.paths.cdi_dir), ids)
                    if ids
                    else cdi.ContainerEdits()
                )
            except cdi.CdiError as exc:
                raise launch.LaunchError(f"failed to inject CDI devices: {exc}") from exc
            spec = launch.build(
                runner.container,
                attrs.evolve(context, pod=self.pod),
                self.ctx.image,
                edits,
                sources,
            )
            volumes.write_devices(spec.devices)
            return spec

        return make

    def _runner(self, container: Obj, policy: str, grace: float) -> ContainerRunner:
        name = str(container.get("name", ""))
        meta = self.pod["metadata"]
        log_dir = self.ctx.paths.log_dir(str(meta["namespace"]), str(meta["name"]), self.uid)
        return ContainerRunner(
            container=container,
            restart_policy=policy,
            make_spec=_not_ready,
            pod_ip=self.pod_ip,
            image=self.ctx.image,
            clock=self.ctx.clock,
            backoff=self.ctx.backoff,
            scratch=self.ctx.paths.pod_dir(self.uid) / "roots" / name,
            log_file=log_dir / name / "0.log",
            pid_dir=self.ctx.pid_dir,
            on_change=self._dirty.set,
            on_event=self._event,
            grace=grace,
            restarts_before=self.restarts_before.get(name, 0),
        )

    def _event(self, kind: str, reason: str, message: str) -> None:
        self.ctx.events.event(dict(self.pod), kind, reason, message)

    # -- status ----------------------------------------------------------------------------

    def _status(self) -> dict[str, Any]:
        waiting_message = self._waiting_message
        records = []
        for runner in self.runners:
            record = runner.record
            if (
                record.state is State.WAITING
                and record.reason == "ContainerCreating"
                and waiting_message
            ):
                record = attrs.evolve(record, message=waiting_message)
            records.append(record)
        base = dict(self.pod)
        if self._last_status is not None:
            base = {
                **base,
                "status": {
                    **(self.pod.get("status") or {}),
                    "conditions": self._last_status["conditions"],
                },
            }
        status = pod_status(
            base,
            [r.record for r in self.init_runners],
            records,
            pod_ip=self.pod_ip,
            host_ip=self.ctx.node.address,
            start_time=self.start_time,
            now=rfc3339(self.ctx.clock.time()),
        )
        status.pop("resourceClaimStatuses", None)  # the resourceclaim controller's field
        return status

    async def _flush_status(self) -> None:
        if self._vanished or self.abandoned:
            return  # an abandoned worker's containers were killed, not finished
        status = self._status()
        if status == self._last_status:
            return
        meta = self.pod["metadata"]
        try:
            await self.ctx.api.patch(
                PODS,
                meta["name"],
                {"status": status},
                namespace=meta["namespace"],
                subresource="status",
            )
        except errors.NotFound:
            self._vanished = True
            return
        self._last_status = status

    async def _status_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                await self._flush_status()
            except errors.ApiError as exc:
                _log.info(
                    "pod status write failed", pod=self.pod["metadata"]["name"], error=str(exc)
                )
                self._dirty.set()
                await self.ctx.clock.sleep(1.0)


_STOP = object()


def _collect(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _not_ready() -> launch.LaunchSpec:
    msg = "the container's launch spec is built once its claims are prepared"
    raise launch.LaunchError(msg)


def _event_message(reason: str, message: str) -> str:
    if reason == "FailedPrepareDynamicResources":
        return f"Failed to prepare dynamic resources: {message}"
    return message
