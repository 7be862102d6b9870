"""The informer against the embedded server: initial list, watch updates, indexes, resync, and a
relist with a diff after the server has forgotten the informer's resourceVersion (410)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.informer import FuncHandler, Informer, is_resync
from computedomain.kube.rest import Api
from computedomain.kube.store import index_by_label
from computedomain.runtime.clock import ManualClock
from computedomain_sim.apiserver import testing
from tests.support.polling import eventually

LABEL = "resource.nvidia.com/computeDomain"


def cm(name: str, namespace: str, cd: str = "", **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if cd:
        meta["labels"] = {LABEL: cd}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}


class Recorder:
    """Collects handler calls as (event, name) pairs."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.resyncs = 0

    def handler(self) -> FuncHandler:
        return FuncHandler(
            add=lambda o: self.calls.append(("add", o["metadata"]["name"])),
            update=self._update,
            delete=lambda o: self.calls.append(("delete", o["metadata"]["name"])),
        )

    def _update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if is_resync(old, new):
            self.resyncs += 1
        else:
            self.calls.append(("update", new["metadata"]["name"]))


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(informer.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_list_then_watch_with_indexes_and_late_handlers(api: Api, namespace: str) -> None:
    await api.create(resources.CONFIG_MAPS, cm("a", namespace, cd="cd1"))
    await api.create(resources.CONFIG_MAPS, cm("b", namespace, cd="cd2"))
    informer = Informer(
        api, resources.CONFIG_MAPS, namespace=namespace, indexers={"cd": index_by_label(LABEL)},
        page_size=1,
    )  # fmt: skip
    early = Recorder()
    informer.add_handler(early.handler())
    assert not informer.has_synced
    async with running(informer):
        assert await informer.wait_for_sync(10)
        assert sorted(early.calls) == [("add", "a"), ("add", "b")]
        late = Recorder()
        informer.add_handler(late.handler())  # synthetic adds for what is cached
        assert sorted(late.calls) == [("add", "a"), ("add", "b")]

        await api.patch(resources.CONFIG_MAPS, "a", {"metadata": {"labels": {LABEL: "cd2"}}},
                        namespace=namespace)  # fmt: skip
        await api.create(resources.CONFIG_MAPS, cm("c", namespace, cd="cd1"))
        await api.delete(resources.CONFIG_MAPS, "b", namespace)
        await eventually(lambda: len(early.calls) == 5, what="three more events")
        assert early.calls[2:] == [("update", "a"), ("add", "c"), ("delete", "b")]
        assert [o["metadata"]["name"] for o in informer.store.by_index("cd", "cd1")] == ["c"]
        assert [o["metadata"]["name"] for o in informer.store.by_index("cd", "cd2")] == ["a"]
        assert sorted(informer.store.keys()) == [f"{namespace}/a", f"{namespace}/c"]
        assert informer.store.get(f"{namespace}/c")["kind"] == "ConfigMap"  # type: ignore[index]


async def test_label_selected_informer_sees_objects_enter_and_leave(
    api: Api, namespace: str
) -> None:
    informer = Informer(
        api, resources.CONFIG_MAPS, namespace=namespace, label_selector=f"{LABEL}=mine"
    )
    seen = Recorder()
    informer.add_handler(seen.handler())
    async with running(informer):
        assert await informer.wait_for_sync(10)
        await api.create(resources.CONFIG_MAPS, cm("x", namespace, cd="other"))
        await api.create(resources.CONFIG_MAPS, cm("y", namespace, cd="mine"))
        await eventually(lambda: seen.calls == [("add", "y")], what="only the selected object")
        assert informer.store.keys() == [f"{namespace}/y"]


async def test_resync_redelivers_unchanged_objects_as_same_object_updates(
    api: Api, namespace: str
) -> None:
    await api.create(resources.CONFIG_MAPS, cm("r", namespace))
    clock = ManualClock()
    informer = Informer(
        api, resources.CONFIG_MAPS, namespace=namespace, resync_period=30.0, clock=clock
    )
    seen = Recorder()
    informer.add_handler(seen.handler())
    async with running(informer):
        assert await informer.wait_for_sync(10)
        await eventually(lambda: clock.sleepers == 1, what="the resync timer")
        clock.advance(30.0)
        await eventually(lambda: seen.resyncs == 1, what="a resync")
        assert seen.calls == [("add", "r")]  # a resync is not a change


@pytest.fixture
def small_window_server(tmp_path: Path) -> Any:
    with testing.running(tmp_path, event_window=3) as server:
        yield server


async def test_relist_after_410_diffs_the_store(small_window_server: Any) -> None:
    server = small_window_server
    api = await connect(ClientConfig(url=server.url, token=server.token, qps=0))
    ns = "default"
    try:
        for name in ("keep", "change", "remove"):
            await api.create(resources.CONFIG_MAPS, cm(name, ns, v="1"))
        informer = Informer(api, resources.CONFIG_MAPS, namespace=ns)
        seen = Recorder()
        informer.add_handler(seen.handler())
        async with running(informer):
            assert await informer.wait_for_sync(10)
        # While the informer is stopped, more changes than the server's event window keeps.
        await api.patch(resources.CONFIG_MAPS, "change", {"data": {"v": "2"}}, namespace=ns)
        await api.delete(resources.CONFIG_MAPS, "remove", ns)
        for i in range(5):
            await api.create(resources.CONFIG_MAPS, cm(f"new-{i}", ns))
        seen.calls.clear()
        async with running(informer):  # resumes its watch from an expired resourceVersion
            await eventually(lambda: informer.relists == 1, what="a relist after 410 Gone")
            await eventually(lambda: len(seen.calls) == 7, what="the diff's events")
        assert sorted(seen.calls) == sorted(
            [("update", "change"), ("delete", "remove")] + [("add", f"new-{i}") for i in range(5)]
        )
        assert f"{ns}/remove" not in informer.store
        assert informer.store.get(f"{ns}/change")["data"] == {"v": "2"}  # type: ignore[index]
    finally:
        await api.close()


async def test_reselect_relists_with_the_new_selector_and_keeps_watching(
    api: Api, namespace: str
) -> None:
    await api.create(resources.CONFIG_MAPS, cm("old", namespace, cd="cd1"))
    await api.create(resources.CONFIG_MAPS, cm("new", namespace, cd="cd2"))
    informer = Informer(
        api, resources.CONFIG_MAPS, namespace=namespace, label_selector=f"{LABEL}=cd1"
    )
    seen = Recorder()
    informer.add_handler(seen.handler())
    informer.reselect(f"{LABEL}=cd1")  # unchanged: nothing to do
    async with running(informer):
        assert await informer.wait_for_sync(10)
        assert seen.calls == [("add", "old")]
        informer.reselect(f"{LABEL}=cd2")

        async def switched() -> bool:
            return sorted(o["metadata"]["name"] for o in informer.store.list()) == ["new"]

        await eventually(switched, what="the store holding only the newly selected object")
        assert sorted(seen.calls) == [("add", "new"), ("add", "old"), ("delete", "old")]
        # The watch goes on with the new selector.
        await api.create(resources.CONFIG_MAPS, cm("later", namespace, cd="cd2"))
        await api.create(resources.CONFIG_MAPS, cm("ignored", namespace, cd="cd1"))

        async def later() -> bool:
            return ("add", "later") in seen.calls

        await eventually(later, what="an add for the object created after the switch")
        await api.create(resources.CONFIG_MAPS, cm("marker", namespace, cd="cd2"))

        async def marker() -> bool:
            return ("add", "marker") in seen.calls

        await eventually(marker, what="an add for the marker")
        assert ("add", "ignored") not in seen.calls
