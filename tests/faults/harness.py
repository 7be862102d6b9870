"""Shared pieces of the fault suites: waiting with deadlines, the cluster the plugin runs in
(an embedded API server with the fault stage, the CRDs, the other parties acting through the
API), and the plugin itself, in-process or as a real ``cd-kubelet-plugin`` process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import attrs
import yaml

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import checkpoint as cp
from computedomain.kubeletplugin.assembly import COMPONENT
from computedomain.kubeletplugin.cdistore import CdiStore
from computedomain.proto import kubelet_client
from computedomain_sim.apiserver.server import EmbeddedApiServer
from computedomain_sim.faults import decide
from computedomain_sim.faults.apiserver import ApiFaults, WatchFault
from computedomain_sim.faults.schedule import FaultScheduler, Rate
from tests.integration.kubeletplugin.conftest import (
    Running,
    World,
    node_environment,
    running_plugin,
)
from tests.support.clusters import CRDS
from tests.support.polling import eventually

PLUGIN_AGENT: Final = COMPONENT
WORLD_AGENT: Final = "fault-tests-world"
COUNTER: Final = "faults.computedomain.test/counter"


# --------------------------------------------------------------------------- the cluster


@attrs.frozen
class Kube:
    """Where a component finds the API server (what ``node_environment`` reads)."""

    kubeconfig: Path


@attrs.define
class Cluster:
    """An embedded API server with the fault stage, the CRDs, and the other parties (the
    controller, scheduler and IMEX daemons, played through the API by :class:`World` with a
    client the faults never touch: they are scoped to the components' user agents)."""

    server: EmbeddedApiServer
    faults: ApiFaults
    api: Api
    world: World
    kube: Kube

    async def component_api(self, agent: str = PLUGIN_AGENT) -> Api:
        """A client as a component makes it (its user agent: what fault rules scope on)."""
        return await connect(
            ClientConfig(
                url=self.server.url,
                token=self.server.admin_token,
                qps=0,
                user_agent=agent,
                field_manager=agent,
            )
        )


@contextlib.asynccontextmanager
async def faulty_cluster(faults: ApiFaults, directory: Path) -> AsyncIterator[Cluster]:
    async with EmbeddedApiServer(stages=[faults]) as server:
        await server.install_crds([CRDS])
        kubeconfig = server.write_kubeconfig(directory / "kubeconfig")
        api = await connect(
            ClientConfig(url=server.url, token=server.admin_token, qps=0, user_agent=WORLD_AGENT)
        )
        try:
            world = World(
                api, node=f"node-{uuid.uuid4().hex[:6]}", namespace=f"team-{uuid.uuid4().hex[:6]}"
            )
            await world.setup()
            yield Cluster(server, faults, api, world, Kube(kubeconfig))
        finally:
            await api.close()


def plugin_environment(root: Path, cluster: Cluster, **extra: str) -> dict[str, str]:
    """The plugin's environment for the cluster's node, every path under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    return node_environment(root, cluster.world, cluster.kube, **extra)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- node state


def checkpoint_path(root: Path) -> Path:
    return root / "p" / names.DRIVER_NAME / cp.FILE_NAME


def read_checkpoint(root: Path) -> cp.Checkpoint:
    """The plugin's checkpoint as on disk (raises CorruptCheckpoint: an invariant broken)."""
    path = checkpoint_path(root)
    return cp.decode(path.read_bytes()) if path.exists() else cp.Checkpoint()


def cdi_specs(root: Path) -> dict[str, dict[str, Any]]:
    """Claim UID -> the claim's CDI spec, for every claim spec file in the node's CDI root."""
    found = {}
    for uid in CdiStore(root / "cdi").claim_uids():
        path = root / "cdi" / names.cdi_claim_spec_file(uid)
        found[uid] = yaml.safe_load(path.read_text())
    return found


def injected(root: Path, uid: str) -> list[str]:
    """What of claim ``uid`` is on the node: its CDI spec file, its checkpoint entry. A
    ``PrepareAborted`` entry is not a trace: it is the tombstone an unprepare leaves so that a
    late prepare is refused (docs/compatibility.md#aborted-prepares-in-the-checkpoint), and it
    holds no device."""
    traces = []
    if (root / "cdi" / names.cdi_claim_spec_file(uid)).exists():
        traces.append("CDI spec file")
    entry = read_checkpoint(root).claims.get(uid)
    if entry is not None and (entry.state is not cp.ClaimState.PREPARE_ABORTED or entry.devices):
        traces.append(f"checkpoint entry ({entry.state})")
    return traces


async def node_annotation(api: Api, node: str) -> str | None:
    obj = await api.get(resources.NODES, node)
    return ((obj["metadata"].get("annotations")) or {}).get(COUNTER)


async def bump_node_annotation(api: Api, node: str) -> str:
    """Another writer of the Node (compare-and-swap, retried on conflict): a counter in an
    annotation. Returns the value written; a later read must still see it (no lost update)."""
    while True:
        obj = await api.get(resources.NODES, node)
        annotations = obj["metadata"].setdefault("annotations", {})
        value = str(int(annotations.get(COUNTER, "0")) + 1)
        annotations[COUNTER] = value
        try:
            await api.update(resources.NODES, obj)
        except errors.Conflict:
            continue
        return value


# --------------------------------------------------------------------------- plugin process


def new_boot(env: dict[str, str]) -> None:
    """A new boot ID, and the CDI directory (a tmpfs) empty again."""
    Path(env["BOOT_ID_PATH"]).write_text(f"{uuid.uuid4()}\n")
    shutil.rmtree(env["CDI_ROOT"], ignore_errors=True)


class PluginProcess:
    """A real ``cd-kubelet-plugin``, restarted whenever it exits (as the kubelet restarts a
    container). Its output goes through a pipe (a full-disk fault makes writes to files fail,
    its log file's included) into :attr:`log`. Every exit status is kept in :attr:`exits`."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.process: asyncio.subprocess.Process | None = None
        self.exits: list[int] = []  # exits it made or was killed into, reboots aside
        self.reboots = 0
        self.log = bytearray()
        self._keeper: asyncio.Task[None] | None = None
        self._drains: set[asyncio.Task[None]] = set()

    @property
    def socket(self) -> str:
        return str(
            Path(self.env["KUBELET_REGISTRAR_DIRECTORY_PATH"]) / f"{names.DRIVER_NAME}-reg.sock"
        )

    @property
    def pid(self) -> int | None:
        p = self.process
        return p.pid if p is not None and p.returncode is None else None

    def tail(self, size: int = 4000) -> str:
        return self.log[-size:].decode(errors="replace")

    async def _spawn(self) -> None:
        binary = Path(sys.executable).with_name("cd-kubelet-plugin")
        self.process = process = await asyncio.create_subprocess_exec(
            str(binary),
            env={**os.environ, **self.env, "V": "3"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert process.stdout is not None
        drain = asyncio.create_task(self._drain(process.stdout))
        self._drains.add(drain)
        drain.add_done_callback(self._drains.discard)

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.log += chunk

    async def _keep(self) -> None:
        while True:
            assert self.process is not None
            code = await self.process.wait()
            self.exits.append(code)
            await asyncio.sleep(0.1)  # the kubelet's restart delay, much shortened
            await self._spawn()

    async def start(self) -> None:
        await self._spawn()
        self._keeper = asyncio.create_task(self._keep())
        await self.serving()

    async def serving(self, within: float = 30.0) -> None:
        """Wait until the plugin answers on its registration socket."""

        async def up() -> bool:
            try:
                await kubelet_client.get_info(self.socket)
            except kubelet_client.KubeletRpcError:
                return False
            return True

        await eventually(up, within=within, what=f"the plugin to serve: {self.tail()}")

    async def client(self) -> kubelet_client.DraClient:
        registration = await kubelet_client.register(self.socket, driver_name=names.DRIVER_NAME)
        return kubelet_client.DraClient.for_registration(registration)

    async def reboot(self) -> None:
        """What a reboot does to the plugin's node: the process is killed, the boot ID
        changes, the CDI directory (a tmpfs) comes back empty, the plugin starts again."""
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        await asyncio.to_thread(new_boot, self.env)
        self.reboots += 1
        await self.start()

    async def stop(self) -> int | None:
        """SIGTERM and wait; the exit status (None if it had to be killed)."""
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        process = self.process
        if process is None or process.returncode is not None:
            return None
        process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(process.wait(), 15)
        except TimeoutError:
            process.kill()
            await process.wait()
            return None
        finally:
            for drain in list(self._drains):
                drain.cancel()


# --------------------------------------------------------------------------- a node in a thread


class NodeThread:
    """One node (API server, the other parties, an in-process plugin and a kubelet client) on
    an event loop of its own thread, for synchronous tests such as Hypothesis properties: one
    per module, each example a :meth:`call`. Attributes are set once :meth:`start` returns."""

    def __init__(self, directory: Path, root: Path, **env: str) -> None:
        self.directory = directory
        self.root = root
        self.extra_env = env
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="fault-node", daemon=True)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self.cluster: Cluster
        self.plugin: Running
        self.kubelet: kubelet_client.DraClient
        self.domain: dict[str, Any]

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._main())
        self.loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with contextlib.AsyncExitStack() as stack:
                faults = ApiFaults("seed=0", enabled=False)
                self.cluster = await stack.enter_async_context(
                    faulty_cluster(faults, self.directory)
                )
                self.domain = await self.cluster.world.domain("alpha")
                await self.cluster.world.daemon_ready(self.domain)
                env = plugin_environment(self.root, self.cluster, **self.extra_env)
                api = await self.cluster.component_api()
                stack.push_async_callback(api.close)
                self.plugin = await stack.enter_async_context(running_plugin(env, api))
                self.kubelet = await self.plugin.kubelet()
                stack.push_async_callback(self.kubelet.close)
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()

    def start(self, timeout: float = 60.0) -> NodeThread:
        self._thread.start()
        if not self._ready.wait(timeout):
            msg = "the node did not start in time"
            raise TimeoutError(msg)
        if self._error is not None:
            raise self._error
        return self

    def call(self, coro: Any, timeout: float = 60.0) -> Any:
        """Run a coroutine on the node's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def alive(self) -> bool:
        """The plugin is still running and serving."""
        return not self.plugin.task.done() and self.plugin.plugin.ready.is_set()

    def stop(self) -> None:
        if self._stop is not None and self._thread.is_alive():
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)


@contextlib.asynccontextmanager
async def chaos(scheduler: FaultScheduler) -> AsyncIterator[FaultScheduler]:
    """Run ``scheduler`` for the duration of the block, then stop it and heal what lasts."""
    task = asyncio.create_task(scheduler.run())
    try:
        yield scheduler
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await scheduler.heal()


def watch_chaos(faults: ApiFaults, seed: int) -> FaultScheduler:
    """Drops (1/s) and expiries (0.5/s) of the long-lived watches, on top of the per-request
    rates (which strike a watch only as it starts)."""
    return FaultScheduler(
        [
            Rate(WatchFault(faults, decide.DROP), 1.0),
            Rate(WatchFault(faults, decide.EXPIRE), 0.5),
        ],
        seed=seed,
    )
