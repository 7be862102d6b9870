"""Re-reading the node's clique ID while the plugin runs, and acting on a change.

The contract: docs/compatibility.md#clique-id-refresh. Activating or deactivating a Fabric
Manager partition can move a node to another clique. Every ``--clique-id-refresh-interval``
(upstream: 10 minutes, the first tick one interval after the start) :class:`CliqueRefresh`
repeats the startup discovery with the startup rules (:mod:`.cliquesource`):

- an error is logged and the old ID kept;
- a new ID is adopted only when it is non-empty and differs (:func:`adopt`): a node never
  falls back to "no clique" at runtime, as upstream;
- on a change the new ID is handed to every reader while the node lock is held, so no prepare
  attempt sees two cliques and every later one uses the new one: the device state (daemon
  ``CLIQUE_ID``, the clique object the channel gate reads, device-node injection), the clique
  informer (relists with the new clique's selector) and the ResourceSlice publisher (republishes
  the ``cliqueID`` attribute); then a Normal event ``CliqueIDChanged`` goes on the Node;
- with ``GPU_CLIQUE_LABEL_ENABLED``, the ``nvidia.com/gpu.clique`` label is patched on every
  successful tick (:mod:`.cliquelabel`); a failure there is logged, not fatal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final

from computedomain.kube import resources
from computedomain.kube.events import NORMAL, EventRecorder
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import cliquesource
from computedomain.kubeletplugin.cliquelabel import LABEL, CliqueLabel, CliqueLabelError
from computedomain.kubeletplugin.nodelock import LockTimeout, NodeLock
from computedomain.nvml.interface import Nvml
from computedomain.runtime import logs

log = logs.get_logger(__name__)

REASON_CHANGED: Final = "CliqueIDChanged"


def adopt(current: str, found: str) -> bool:
    """Whether a discovered clique ID replaces the current one: non-empty and different. Pure."""
    return bool(found) and found != current


def change_message(old: str, new: str) -> str:
    """The Node event's message. Pure."""
    return (
        f"NVLink clique ID changed from {old or '(none)'} to {new}: the ResourceSlice's cliqueID "
        "is republished and claims prepared from now on use the new clique; IMEX daemons "
        "prepared before keep the old one until their pods are replaced"
    )


class CliqueRefresh:
    """The node's current clique ID (:attr:`current`) and the loop that keeps it so."""

    def __init__(
        self,
        *,
        api: Api,
        node_name: str,
        nvml: Nvml,
        rules: cliquesource.CliqueRules,
        initial: str,
        lock: NodeLock,
        recorder: EventRecorder,
        label: CliqueLabel | None,
    ) -> None:
        self.api = api
        self.node_name = node_name
        self.nvml = nvml
        self.rules = rules
        self.current = initial
        self.lock = lock
        self.recorder = recorder
        self.label = label
        self.readers: list[Callable[[str], None]] = []
        self.ticks = 0  # refreshes done (for tests and diagnostics)
        self.changes = 0

    def add_reader(self, reader: Callable[[str], None]) -> None:
        """Call ``reader(new_id)`` on every change, under the node lock. Keep it quick."""
        self.readers.append(reader)

    async def discover(self) -> str:
        """One discovery under the startup rules. Blocking parts run in a thread; raises what
        the NVML backend or the rules raise."""
        gpus = await asyncio.to_thread(self.nvml.gpus)
        return cliquesource.clique_of(gpus, self.rules)

    async def tick(self) -> bool:
        """One refresh (see the module doc); True when the clique changed. Never raises."""
        try:
            found = await self.discover()
        except Exception as exc:  # NVML or rule failures: keep the old ID, try next tick
            log.warning(f"error refreshing {LABEL} node label: error getting cliqueID: {exc}")
            self.ticks += 1
            return False
        changed = adopt(self.current, found)
        if changed:
            await self._switch(found)
        if self.label is not None:
            try:
                await self.label.publish(self.current)
            except CliqueLabelError as exc:
                log.warning("could not refresh the node's clique label", error=str(exc))
        self.ticks += 1
        return changed

    async def _switch(self, new: str) -> None:
        old = self.current
        log.info(f'GPU clique ID changed from "{old}" to "{new}", updating {LABEL} node label')
        while True:
            try:
                async with self.lock.held():
                    self.current = new
                    for reader in self.readers:
                        reader(new)
                    break
            except LockTimeout:
                log.info("clique change waits for the node lock", clique=new)
        self.changes += 1
        self.recorder.event(await self._node(), NORMAL, REASON_CHANGED, change_message(old, new))

    async def _node(self) -> dict[str, Any]:
        """The Node for the event (its UID when it can be read)."""
        try:
            return await self.api.get(resources.NODES, self.node_name)
        except Exception as exc:
            log.debug("reading the Node for the event failed", error=str(exc))
            return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node_name}}

    async def run(self, interval: float) -> None:
        """Refresh every ``interval`` seconds, the first one interval from now, until
        cancelled."""
        while True:
            await asyncio.sleep(interval)
            await self.tick()
