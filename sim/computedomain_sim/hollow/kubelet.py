"""One hollow node: its Node object and heartbeat, its kubelet plugin, the plugin's
registration with the kubelet, and a worker per pod bound to it.

Created by :mod:`.cluster`, many per process. The Node is registered by the simulated kubelet's
:class:`~computedomain_sim.kubelet.node.NodeAgent` (which also writes the node's files: boot
id, ``/proc/devices``, the fabric capability). The plugin (:mod:`.plugin`) serves on the node's
sockets; the kubelet side registers it through the real handshake
(:class:`~computedomain_sim.kubelet.plugins.PluginManager`: GetInfo, NotifyRegistrationStatus)
and calls it through :class:`~computedomain_sim.kubelet.dra.DraManager`. The registry directory
is scanned when the plugin is up and again whenever a prepare finds no registered driver
(instead of the simulated kubelet's 0.2 s polling, which at 1,152 nodes would be the busiest
thing in the process). Pods arrive through :meth:`HollowKubelet.pod_event`, called by the
process's one pod informer (:mod:`.informers`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

from computedomain.kube.rest import Api
from computedomain.runtime import logs
from computedomain_sim.kubelet.dra import DraManager
from computedomain_sim.kubelet.node import NodeAgent, NodeConfig
from computedomain_sim.kubelet.paths import NodePaths
from computedomain_sim.kubelet.plugins import PluginManager

from .plugin import HollowPlugin
from .pods import HollowPod, NodeContext

__all__ = ["HollowKubelet"]

_log = logs.get_logger(__name__)
Obj = Mapping[str, Any]
# The kubelet's nodeStatusReportFrequency: with node leases (kubelets since 1.17) the Node's
# status is posted only when it changes or every 5 minutes. (Hollow nodes keep no Lease: nothing
# here reads one, and a real lease renewal never reaches a Node watcher.)
HEARTBEAT = 300.0


class _Plugins(PluginManager):
    """The plugin manager, scanning on demand: a driver not yet known triggers a scan."""

    async def ensure(self, driver: str) -> None:
        if driver not in self.plugins:
            await self.scan()


class _Dra(DraManager):
    """The DRA manager of a hollow kubelet: scans for the plugin before each call."""

    plugins: _Plugins

    async def _call_prepare(self, driver: str, refs: Any) -> Any:
        await self.plugins.ensure(driver)
        return await super()._call_prepare(driver, refs)


class HollowKubelet:
    """One node. :meth:`run` until cancelled; :meth:`wait_ready` once it serves."""

    def __init__(
        self,
        node: NodeConfig,
        paths: NodePaths,
        plugin: HollowPlugin,
        *,
        kubelet_api: Api,
        daemon_api: Api,
        pod_subnet: str,
    ) -> None:
        self.name = node.name
        self.node = node
        self.paths = paths
        self.plugin = plugin
        self.agent = NodeAgent(kubelet_api, node, paths, heartbeat=HEARTBEAT)
        self.plugins = _Plugins(paths, on_change=lambda: None, on_gone=_nothing)
        self.ctx = NodeContext(
            name=node.name,
            address=node.address,
            paths=paths,
            api=kubelet_api,
            daemon_api=daemon_api,
            dra=_Dra(kubelet_api, self.plugins),
            node_env=dict(node.env),
        )
        self.pods: dict[str, HollowPod] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._subnet = pod_subnet  # "10.a.b": pod IPs are 10.a.b.1 ... 10.a.b.254
        self._next_ip = 0
        self._ready = asyncio.Event()

    async def run(self) -> None:
        """Register the node, start the plugin and register it; run until cancelled."""
        await asyncio.to_thread(self.paths.create)
        await self.agent.register()
        plugin = asyncio.ensure_future(self.plugin.run())
        heartbeat = asyncio.ensure_future(self.agent.run())
        ready = asyncio.ensure_future(self.plugin.ready.wait())
        try:
            await asyncio.wait([ready, plugin], return_when=asyncio.FIRST_COMPLETED)
            if plugin.done():
                plugin.result()  # the plugin failed to start: raise its error
                return
            await self._register_plugin()
            self._ready.set()
            # asyncio.wait, not gather: cancelling this task must not cancel the plugin a
            # second time while it stops its gRPC servers (below, once).
            done, _ = await asyncio.wait([plugin, heartbeat], return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            ready.cancel()
            heartbeat.cancel()
            await self.abandon()
            await self.plugins.close()
            plugin.cancel()
            await asyncio.gather(plugin, heartbeat, ready, return_exceptions=True)

    async def _register_plugin(self) -> None:
        """Scan the registry until the plugin's handshake succeeded (a busy process may miss
        GetInfo's deadline; the real kubelet retries on its next registry event too)."""
        delay = 0.2
        while not self.plugins.plugins:
            await self.plugins.scan()
            if not self.plugins.plugins:
                await asyncio.sleep(delay)  # retry back-off, not synchronisation
                delay = min(delay * 2, 5.0)

    async def wait_ready(self) -> None:
        await self._ready.wait()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    # -- pods ------------------------------------------------------------------------------

    def pod_event(self, pod: Obj, *, deleted: bool = False) -> None:
        """A change of a pod bound to this node (``deleted``: it is gone from the API)."""
        uid = str(pod["metadata"]["uid"])
        worker = self.pods.get(uid)
        if deleted:
            if worker is not None:
                worker.vanished()
            return
        if worker is not None:
            worker.update(pod)
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        worker = HollowPod(self.ctx, pod, self._pod_ip())
        worker.update(pod)
        self.pods[uid] = worker

        async def run() -> None:
            try:
                await worker.run()
            except Exception:
                _log.exception("hollow pod worker failed", node=self.name, pod=uid)
            finally:
                self.pods.pop(uid, None)
                self._tasks.pop(uid, None)

        self._tasks[uid] = asyncio.ensure_future(run())

    def _pod_ip(self) -> str:
        self._next_ip = self._next_ip % 254 + 1
        return f"{self._subnet}.{self._next_ip}"

    async def abandon(self) -> None:
        """Stop every pod worker without tearing anything down (the process is ending)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        self.pods.clear()


async def _nothing(_driver: str) -> None:
    """The registry's on_gone: hollow nodes keep their slices when a plugin goes."""
