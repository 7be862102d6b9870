"""The event recorder against the embedded server: core/v1 Events, de-duplicated by count."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from computedomain.kube import resources
from computedomain.kube.eventcorrelator import Correlator
from computedomain.kube.events import EventRecorder
from computedomain.kube.rest import Api
from computedomain.runtime.clock import ManualClock


@pytest.fixture
async def pod(api: Api, namespace: str) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "workload", "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    return await api.create(resources.PODS, body)


@contextlib.asynccontextmanager
async def recording(recorder: EventRecorder) -> AsyncIterator[EventRecorder]:
    task = asyncio.create_task(recorder.run())
    try:
        yield recorder
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_repeats_bump_count_on_one_event(
    api: Api, namespace: str, pod: dict[str, Any]
) -> None:
    clock = ManualClock(start_time=1_900_000_000.0)
    recorder = EventRecorder(api, component="cd-kubelet-plugin", host="node-1", clock=clock)
    async with recording(recorder):
        for _ in range(3):
            recorder.event(pod, "Warning", "WaitingForDaemon", "the IMEX daemon is not ready")
            clock.advance(5)
        recorder.event(pod, "Normal", "Prepared", "channel 0 injected")
        await asyncio.wait_for(recorder.flush(), 10)
    items, _ = await api.list_all(resources.EVENTS, namespace)
    by_reason = {e["reason"]: e for e in items}
    assert sorted(by_reason) == ["Prepared", "WaitingForDaemon"]
    waiting = by_reason["WaitingForDaemon"]
    assert waiting["count"] == 3
    assert waiting["type"] == "Warning"
    assert waiting["firstTimestamp"] == "2030-03-17T17:46:40Z"
    assert waiting["lastTimestamp"] == "2030-03-17T17:46:50Z"
    assert waiting["involvedObject"] == {
        "apiVersion": "v1", "kind": "Pod", "name": "workload", "namespace": namespace,
        "uid": pod["metadata"]["uid"], "resourceVersion": pod["metadata"]["resourceVersion"],
    }  # fmt: skip
    assert waiting["source"] == {"component": "cd-kubelet-plugin", "host": "node-1"}
    assert waiting["reportingComponent"] == "cd-kubelet-plugin"
    assert waiting["reportingInstance"] == "node-1"
    assert api.stats.total(verb="create", resource="events") == 2
    assert api.stats.total(verb="patch", resource="events") == 2


async def test_flood_is_cut_by_the_per_object_bucket_and_bad_input_never_raises(
    api: Api, namespace: str, pod: dict[str, Any]
) -> None:
    clock = ManualClock()
    recorder = EventRecorder(
        api, component="c", clock=clock, correlator=Correlator(burst=3, clock=clock)
    )
    async with recording(recorder):
        for i in range(10):
            recorder.event(pod, "Warning", "Flapping", f"attempt {i}")
        recorder.event(pod, "Bogus", "X", "invalid type is dropped")
        recorder.event({"kind": "Pod"}, "Normal", "X", "no name: dropped")
        await asyncio.wait_for(recorder.flush(), 10)
    items, _ = await api.list_all(resources.EVENTS, namespace)
    assert len(items) == 3
    assert recorder.dropped == 7


async def test_cluster_scoped_objects_get_events_in_default(api: Api) -> None:
    node = await api.create(resources.NODES, {"metadata": {"name": "ev-node"}})
    try:
        recorder = EventRecorder(api, component="c", clock=ManualClock())
        async with recording(recorder):
            recorder.event(node, "Normal", "Labelled", "node labelled for a domain")
            await asyncio.wait_for(recorder.flush(), 10)
        items, _ = await api.list_all(
            resources.EVENTS, "default", field_selector="involvedObject.name=ev-node"
        )
        assert [e["reason"] for e in items] == ["Labelled"]
    finally:
        await api.delete(resources.NODES, "ev-node")
