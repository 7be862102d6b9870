"""Publishing the node's ResourceSlice and keeping it so.

The slice's content: docs/compatibility.md#devices-and-resourceslices.

An informer watches this driver's slices on this node (field selector ``spec.driver``,
``spec.nodeName``); every change, and a periodic resync, triggers a reconcile: the Node's UID is
read (the slice is owned by the Node), :func:`computedomain.kubeletplugin.sliceplan.plan`
decides, and the writes are applied — create, update by compare-and-swap, delete with a UID
precondition. A new clique ID (:meth:`SlicePublisher.set_clique`, from the periodic refresh)
triggers one too, so the ``cliqueID`` attribute follows the node. A failed reconcile is
retried with backoff. Slices are not deleted at shutdown: the kubelet wipes them when the plugin
stays away (upstream's behaviour).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain.kube.informer import FuncHandler, Informer
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import sliceplan
from computedomain.runtime import logs
from computedomain.runtime.cancellation import raise_if_cancelling

log = logs.get_logger(__name__)

RESYNC: Final = 300.0
RETRY_MIN: Final = 0.5
RETRY_MAX: Final = 30.0


class SlicePublisher:
    def __init__(
        self, api: Api, *, node_name: str, clique_id: str, host_managed: bool = False
    ) -> None:
        self.api = api
        self.node_name = node_name
        self.clique_id = clique_id
        self.host_managed = host_managed
        self.informer = Informer(
            api,
            resources.RESOURCE_SLICES,
            field_selector=f"spec.driver={names.DRIVER_NAME},spec.nodeName={node_name}",
            name="resourceslices",
        )
        self._dirty = asyncio.Event()
        self.informer.add_handler(
            FuncHandler(
                add=lambda _: self._dirty.set(),
                update=lambda _, __: self._dirty.set(),
                delete=lambda _: self._dirty.set(),
            )
        )
        self.reconciles = 0

    def set_clique(self, clique_id: str) -> None:
        """Publish ``clique_id`` from now on (the clique refresh): reconcile at once."""
        self.clique_id = clique_id
        self._dirty.set()

    async def reconcile(self) -> list[sliceplan.Action]:
        """One pass; returns the actions applied. Raises ApiError on failure."""
        node = await self.api.get(resources.NODES, self.node_name)
        desired = sliceplan.Desired(
            node=self.node_name,
            node_uid=str((node.get("metadata") or {}).get("uid", "")),
            clique_id=self.clique_id,
            host_managed=self.host_managed,
        )
        actions = sliceplan.plan(self.informer.store.list(), desired)
        for action in actions:
            if isinstance(action, sliceplan.Create):
                created = await self.api.create(resources.RESOURCE_SLICES, action.body)
                log.info("published the ResourceSlice", name=created["metadata"]["name"])
            elif isinstance(action, sliceplan.Update):
                await self.api.update(resources.RESOURCE_SLICES, action.body)
                log.info("repaired the ResourceSlice", name=action.body["metadata"]["name"])
            else:
                with contextlib.suppress(errors.NotFound):
                    await self.api.delete(resources.RESOURCE_SLICES, action.name, uid=action.uid)
                log.info("deleted an obsolete ResourceSlice", name=action.name)
        self.reconciles += 1
        return actions

    async def run(self) -> None:
        """Reconcile after sync, on every change and every RESYNC seconds, until cancelled."""
        await self.informer.wait_for_sync()
        delay = RETRY_MIN
        while True:
            self._dirty.clear()
            try:
                actions = await self.reconcile()
            except Exception as exc:  # API trouble or odd objects: never crash-loop; retry
                raise_if_cancelling()
                log.warning("ResourceSlice reconcile failed", retry_in=delay, error=str(exc))
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
                continue
            delay = RETRY_MIN
            if actions:
                log.debug("applied ResourceSlice actions", actions=len(actions))
            # Our own writes come back as watch events and set the flag: the next pass then
            # sees them in the store (never plans from a store that misses our last write).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RESYNC):
                    await self._dirty.wait()
