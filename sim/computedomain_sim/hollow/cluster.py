"""Many hollow nodes in one process, with the simulation's scheduler and controllers.

Used by ``computedomain sim hollow`` and ``bench/scale.py`` against an API server that runs
elsewhere (its own process, as in a cluster); the ComputeDomain controller is a separate process
started by the caller. :class:`HollowCluster` starts the shared informers (:mod:`.informers`),
the scheduler, the DaemonSet and ResourceClaim controllers and pod GC
(:mod:`computedomain_sim.controllers`, :mod:`computedomain_sim.scheduler`), then one
:class:`.kubelet.HollowKubelet` per node of ``racks`` x ``nodes_per_rack`` (rack ``r`` is NVLink
clique ``<cluster UUID>.<r>``, as in :mod:`computedomain_sim.cluster.topology`; nodes are named
``r<rack>n<index>``). Node files live under ``state_dir`` (short: socket paths must fit 107
bytes; tmpfs is best, as hundreds of nodes share one disk).

API clients: one per component kind, shared by all nodes of the process (``kubelet``,
``compute-domain-kubelet-plugin``, ``compute-domain-daemon``, ``sim-controllers`` as their
User-Agents, so the API server can count by component), without client-side rate limits. A real
node has one client (and a 5 qps limit) per program; one pool per process is what fits here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.events import EventRecorder
from computedomain.kube.informer import FuncHandler
from computedomain.kube.informerfactory import InformerFactory
from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.rest import Api
from computedomain.runtime import logs
from computedomain_sim.cluster import topology
from computedomain_sim.controllers.daemonset_controller import DaemonSetController
from computedomain_sim.controllers.podgc import PodGarbageCollector
from computedomain_sim.controllers.resourceclaim_controller import ResourceClaimController
from computedomain_sim.kubelet.node import NodeConfig
from computedomain_sim.kubelet.paths import NodePaths
from computedomain_sim.scheduler.scheduler import Scheduler

from .informers import SharedInformers
from .kubelet import HollowKubelet
from .plugin import HollowPlugin, plugin_config

__all__ = ["AGENTS", "HollowCluster", "HollowConfig", "node_configs"]

_log = logs.get_logger(__name__)

AGENTS = {
    "kubelet": "kubelet",
    "plugin": "compute-domain-kubelet-plugin",
    "daemon": "compute-domain-daemon",
    "controllers": "sim-controllers",
}
START_CONCURRENCY = 64


@attrs.frozen
class HollowConfig:
    """What to run and where: the API server, the machines, the node files."""

    client: ClientConfig  # where the API server is (each component's client: this, evolved)
    state_dir: Path
    racks: int = 2
    nodes_per_rack: int = 18
    profile: str = "gb200"
    seed: str = "computedomain-sim"
    namespace: str = "computedomain-system"
    plugin_env: Mapping[str, str] = attrs.field(factory=dict)
    controllers: bool = True

    def __attrs_post_init__(self) -> None:
        if self.racks < 1 or self.nodes_per_rack < 1:
            msg = (
                f"racks and nodes per rack must be at least 1 ({self.racks}x{self.nodes_per_rack})"
            )
            raise ValueError(msg)
        if self.racks * self.nodes_per_rack > 250 * 250:
            msg = "at most 62,500 hollow nodes"
            raise ValueError(msg)


def node_configs(config: HollowConfig) -> list[NodeConfig]:
    """The nodes, rack by rack, labelled as :func:`computedomain_sim.cluster.topology.nodes`
    labels them. Pure."""
    cluster = topology.Topology(racks=1, nodes_per_rack=1, profile=config.profile, seed=config.seed)
    files = topology.driver_files(config.profile)
    out: list[NodeConfig] = []
    for rack in range(config.racks):
        clique = cluster.clique(rack)
        for index in range(config.nodes_per_rack):
            n = len(out)
            out.append(
                NodeConfig(
                    name=f"r{rack}n{index}",
                    address=f"172.{16 + n // 65536}.{n // 256 % 256}.{n % 256}",
                    labels={
                        topology.GPU_PRESENT_LABEL: "true",
                        topology.CLIQUE_LABEL: clique,
                        topology.RACK_LABEL: f"r{rack}",
                    },
                    env={"FAKE_NVML_PROFILE": config.profile, "FAKE_NVML_CLIQUE": clique},
                    driver_files=files,
                )
            )
    return out


class HollowCluster:
    """The hollow nodes of one process. :meth:`start`, then :meth:`stop`."""

    def __init__(self, config: HollowConfig) -> None:
        self.config = config
        self.apis: dict[str, Api] = {}
        self.shared: SharedInformers | None = None
        self.kubelets: dict[str, HollowKubelet] = {}
        self._tasks: list[asyncio.Task[Any]] = []

    async def _connect(self, kind: str) -> Api:
        api = await connect(attrs.evolve(self.config.client, qps=0, user_agent=AGENTS[kind]))
        self.apis[kind] = api
        return api

    async def start(self, *, within: float = 600.0) -> None:
        """Start everything and wait until every node serves. Raises (after stopping what
        started) on failure or when ``within`` seconds pass."""
        try:
            async with asyncio.timeout(within):
                await self._start()
        except BaseException:
            await self.stop()
            raise

    def _spawn(self, name: str, coro: Any) -> None:
        self._tasks.append(asyncio.create_task(coro, name=name))

    async def _start(self) -> None:
        config = self.config
        kubelet_api = await self._connect("kubelet")
        plugin_api = await self._connect("plugin")
        daemon_api = await self._connect("daemon")
        shared = self.shared = SharedInformers(plugin_api, namespace=config.namespace)
        node_cache = MutationCache(shared.nodes.store)
        shared.nodes.add_handler(node_cache)
        shared.pods.add_handler(
            FuncHandler(
                add=self._dispatch,
                update=lambda _old, new: self._dispatch(new),
                delete=lambda obj: self._dispatch(obj, deleted=True),
            )
        )
        for informer in shared.informers:
            self._spawn(f"informer/{informer.name}", informer.run())
        if config.controllers:
            api = await self._connect("controllers")
            # One informer per resource for all of them, as in kube-controller-manager.
            control_plane = InformerFactory(api, prefix="control-plane")
            kinds: dict[str, Any] = {
                "scheduler": Scheduler,
                "daemonset-controller": DaemonSetController,
                "resourceclaim-controller": ResourceClaimController,
                "pod-garbage-collector": PodGarbageCollector,
            }
            for name, kind in kinds.items():
                events = EventRecorder(api, component=name)
                self._spawn(f"events-{name}", events.run())
                self._spawn(name, kind(api, events=events, informers=control_plane).run())
        for n, node in enumerate(node_configs(config)):
            paths = NodePaths(config.state_dir / node.name)
            plugin_cfg = plugin_config(
                node.name,
                paths,
                namespace=config.namespace,
                profile=config.profile,
                clique=node.env["FAKE_NVML_CLIQUE"],
                base_env=config.plugin_env,
            )
            self.kubelets[node.name] = HollowKubelet(
                node,
                paths,
                HollowPlugin(plugin_cfg, plugin_api, shared, node_cache),
                kubelet_api=kubelet_api,
                daemon_api=daemon_api,
                pod_subnet=f"10.{n // 250}.{n % 250}",
            )
        gate = asyncio.Semaphore(START_CONCURRENCY)
        for kubelet in self.kubelets.values():
            self._spawn(f"node-{kubelet.name}", self._run_node(kubelet, gate))
        await shared.wait_for_sync()
        for kubelet in self.kubelets.values():
            await self._first(kubelet.wait_ready())

    async def _run_node(self, kubelet: HollowKubelet, gate: asyncio.Semaphore) -> None:
        async with gate:  # bounded start-up burst; released once the node serves
            run = asyncio.ensure_future(kubelet.run())
            ready = asyncio.ensure_future(kubelet.wait_ready())
            await asyncio.wait([run, ready], return_when=asyncio.FIRST_COMPLETED)
            ready.cancel()
        if kubelet.ready and self.shared is not None:
            for pod in self.shared.pods_of(kubelet.name):  # what arrived before it served
                kubelet.pod_event(pod)
        await run

    async def _first(self, awaitable: Any) -> None:
        """Await ``awaitable``, raising at once if a cluster task failed."""
        waiter = asyncio.ensure_future(awaitable)
        pending = [t for t in self._tasks if not t.done()]
        done, _ = await asyncio.wait([waiter, *pending], return_when=asyncio.FIRST_COMPLETED)
        if waiter in done:
            waiter.result()
            return
        waiter.cancel()
        failed = next(iter(done))
        exc = None if failed.cancelled() else failed.exception()
        raise RuntimeError(f"hollow cluster task {failed.get_name()} ended") from exc

    def _dispatch(self, pod: Mapping[str, Any], *, deleted: bool = False) -> None:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        kubelet = self.kubelets.get(node)
        if kubelet is not None and kubelet.ready:
            kubelet.pod_event(pod, deleted=deleted)

    def pods_of(self, node: str) -> list[dict[str, Any]]:
        """The pods bound to ``node`` (from the shared cache)."""
        assert self.shared is not None
        return self.shared.pods_of(node)

    async def stop(self) -> None:
        """Stop every node and component (idempotent). Nothing is deleted from the API."""
        # Nodes first (they stop their gRPC servers), then controllers and informers.
        nodes = [t for t in self._tasks if t.get_name().startswith("node-")]
        for task in nodes:
            task.cancel()
        await asyncio.gather(*nodes, return_exceptions=True)
        for task in reversed(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for api in self.apis.values():
            with contextlib.suppress(Exception):
                await api.close()
        self.apis.clear()
