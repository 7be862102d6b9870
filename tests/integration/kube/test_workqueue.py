"""Informer → work queue → workers driving a toy reconcile against the embedded server.

The toy controller keeps, for every ConfigMap labelled ``role=source``, a ConfigMap
``<name>-mirror`` whose data equals the source's. It writes with compare-and-swap, reads through
a read-your-writes cache, and survives a conflicting writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any

from computedomain.kube import errors, resources
from computedomain.kube.informer import EnqueueHandler, Informer
from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.rest import Api
from computedomain.kube.store import split_key
from computedomain.kube.workqueue import RateLimitingQueue, run_workers
from tests.support.polling import eventually


def source(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"role": "source"}},
        "data": dict(data),
    }


def owner_key(obj: dict[str, Any]) -> str | None:
    """Mirrors map to their source's key; sources to their own."""
    meta = obj["metadata"]
    if (meta.get("labels") or {}).get("role") == "source":
        return f"{meta['namespace']}/{meta['name']}"
    mirrored = (meta.get("annotations") or {}).get("mirror-of")
    return f"{meta['namespace']}/{mirrored}" if mirrored else None


async def test_toy_controller_converges_and_recovers(api: Api, namespace: str) -> None:
    informer = Informer(api, resources.CONFIG_MAPS, namespace=namespace)
    cache = MutationCache(informer.store)
    informer.add_handler(cache)
    queue: RateLimitingQueue[str] = RateLimitingQueue(name="mirror", base_delay=0.01)
    informer.add_handler(EnqueueHandler(queue, key=owner_key))
    handled: list[str] = []

    async def reconcile(key: str) -> None:
        handled.append(key)
        ns, name = split_key(key)
        assert ns is not None
        src = cache.get(key)
        mirror_key = f"{ns}/{name}-mirror"
        mirror = cache.get(mirror_key)
        if src is None:
            if mirror is not None:
                with contextlib.suppress(errors.NotFound):
                    await api.delete(resources.CONFIG_MAPS, f"{name}-mirror", ns)
                cache.forget(mirror_key)
            return
        want = src.get("data") or {}
        if mirror is None:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{name}-mirror", "namespace": ns,
                             "annotations": {"mirror-of": name}},
                "data": want,
            }  # fmt: skip
            cache.mutation(await api.create(resources.CONFIG_MAPS, body))
        elif mirror.get("data") != want:
            updated = copy.deepcopy(mirror)  # never edit a cached object
            updated["data"] = want
            cache.mutation(await api.update(resources.CONFIG_MAPS, updated))

    async def mirrors() -> dict[str, Any]:
        items, _ = await api.list_all(resources.CONFIG_MAPS, namespace)
        names = {i["metadata"]["name"]: i.get("data") for i in items}
        return {name: data for name, data in names.items() if name.endswith("-mirror")}

    informer_task = asyncio.create_task(informer.run())
    assert await informer.wait_for_sync(10)
    workers = asyncio.create_task(run_workers(queue, reconcile, workers=2))
    try:
        await api.create(resources.CONFIG_MAPS, source("a", namespace, k="1"))
        await api.create(resources.CONFIG_MAPS, source("b", namespace, k="2"))
        await _until(mirrors, {"a-mirror": {"k": "1"}, "b-mirror": {"k": "2"}})

        # Someone else edits a mirror behind our back: the watch brings it back to the queue.
        await api.patch(resources.CONFIG_MAPS, "a-mirror", {"data": {"k": "tampered"}},
                        namespace=namespace)  # fmt: skip
        await api.patch(resources.CONFIG_MAPS, "b", {"data": {"k": "3"}}, namespace=namespace)
        await _until(mirrors, {"a-mirror": {"k": "1"}, "b-mirror": {"k": "3"}})

        await api.delete(resources.CONFIG_MAPS, "a", namespace)
        await _until(mirrors, {"b-mirror": {"k": "3"}})
        await eventually(lambda: len(queue) == 0 and not queue.processing, what="an idle queue")
        assert all(queue.num_requeues(k) == 0 for k in set(handled))
    finally:
        queue.shutdown()
        await asyncio.wait_for(workers, 10)
        informer_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await informer_task


async def _until(probe: Any, expected: object) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + 10
    while True:
        value = await probe()
        if value == expected:
            return
        assert loop.time() < end, f"still {value!r}, wanted {expected!r}"
        await asyncio.sleep(0.02)
