"""The simulated scheduler through the real client, with slow writes so that the bindings of
many pods overlap: however the writes interleave, a device goes to at most one claim, every
bound pod's claim is allocated on the pod's node, and the pods that found no device wait with
a reason. Then a pod sharing an already allocated claim follows it to its node."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.events import EventRecorder
from computedomain.kube.resources import (
    DEVICE_CLASSES,
    NODES,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
)
from computedomain.kube.rest import Api
from computedomain_sim.apiserver.server import EmbeddedApiServer
from computedomain_sim.faults.apiserver import ApiFaults
from computedomain_sim.scheduler.scheduler import Scheduler
from tests.support.polling import eventually

NS = "default"
DRIVER = "test.example.com"
NODE_COUNT = 5
POD_COUNT = 12  # more pods than devices: some must stay pending


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def resource_slice(node_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "dev-0", "attributes": {"kind": {"string": "test"}}}],
        },
    }


def claim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "test"}}]}},
    }


def pod_using(name: str, claim_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "d"}]}}],
            "resourceClaims": [{"name": "d", "resourceClaimName": claim_name}],
        },
    }


@contextlib.asynccontextmanager
async def scheduler_on_slow_server() -> AsyncIterator[Api]:
    """A scheduler against a server that delays every request by 5-40 ms."""
    faults = ApiFaults("latency=5ms..40ms,seed=7")
    async with EmbeddedApiServer(stages=[faults]) as server:
        api = await connect(ClientConfig(url=server.url, token=server.admin_token, qps=0))
        events = EventRecorder(api, component="scheduler")
        tasks = [
            asyncio.create_task(events.run()),
            asyncio.create_task(Scheduler(api, events=events).run()),
        ]
        try:
            yield api
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await api.close()


def devices_of(claims: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (r["pool"], r["device"])
        for c in claims
        for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get(
            "results"
        )
        or []
    ]


async def test_overlapping_bindings_never_give_a_device_twice() -> None:
    async with scheduler_on_slow_server() as api:
        await api.create(
            DEVICE_CLASSES,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "test"},
                "spec": {
                    "selectors": [
                        {"cel": {"expression": f"device.driver == '{DRIVER}'"}},
                    ]
                },
            },
        )
        for i in range(NODE_COUNT):
            await api.create(NODES, node(f"n{i}"))
            await api.create(RESOURCE_SLICES, resource_slice(f"n{i}"))
        # All pods at once: their decisions follow each other, their writes overlap.
        await asyncio.gather(
            *(api.create(RESOURCE_CLAIMS, claim(f"c{i}"), NS) for i in range(POD_COUNT))
        )
        await asyncio.gather(
            *(api.create(PODS, pod_using(f"p{i}", f"c{i}"), NS) for i in range(POD_COUNT))
        )

        async def settled() -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
            pods = (await api.list(PODS, NS))["items"]
            bound = [p for p in pods if p["spec"].get("nodeName")]
            waiting = [
                p
                for p in pods
                if any(
                    c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                    for c in (p.get("status") or {}).get("conditions") or []
                )
            ]
            if len(bound) + len(waiting) < POD_COUNT:
                return None
            return bound, (await api.list(RESOURCE_CLAIMS, NS))["items"]

        bound, claims = await eventually(settled, within=60, what="every pod decided")
        allocated = devices_of(claims)
        assert len(allocated) == len(set(allocated)), f"a device went twice: {allocated}"
        assert len(bound) == NODE_COUNT  # one device per node: every node got exactly one pod
        assert len({p["spec"]["nodeName"] for p in bound}) == NODE_COUNT
        by_name = {c["metadata"]["name"]: c for c in claims}
        for p in bound:
            used = by_name[p["spec"]["resourceClaims"][0]["resourceClaimName"]]
            status = used.get("status") or {}
            assert [r["pool"] for r in status["allocation"]["devices"]["results"]] == [
                p["spec"]["nodeName"]
            ]
            assert [r["uid"] for r in status["reservedFor"]] == [p["metadata"]["uid"]]

        # A pod sharing a bound pod's claim goes where that claim's device is.
        first = bound[0]
        shared = first["spec"]["resourceClaims"][0]["resourceClaimName"]
        await api.create(PODS, pod_using("sharer", shared), NS)

        async def sharer_bound() -> dict[str, Any] | None:
            got = await api.get(PODS, "sharer", NS)
            return got if got["spec"].get("nodeName") else None

        sharer = await eventually(sharer_bound, within=30, what="the sharing pod bound")
        assert sharer["spec"]["nodeName"] == first["spec"]["nodeName"]


async def test_a_pod_bound_but_not_yet_seen_bound_is_not_bound_again() -> None:
    """A claim's change can requeue a pod after its binding and before the watch shows the pod
    bound: that pod is assumed, and a second sync leaves it alone (a second binding would be
    refused with 409)."""
    async with EmbeddedApiServer() as server:
        api = await connect(ClientConfig(url=server.url, token=server.admin_token, qps=0))
        try:
            await api.create(
                DEVICE_CLASSES,
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "DeviceClass",
                    "metadata": {"name": "test"},
                    "spec": {"selectors": [{"cel": {"expression": "true"}}]},
                },
            )
            await api.create(NODES, node("n0"))
            await api.create(RESOURCE_SLICES, resource_slice("n0"))
            await api.create(RESOURCE_CLAIMS, claim("c0"), NS)
            await api.create(PODS, pod_using("p0", "c0"), NS)
            scheduler = Scheduler(api, events=EventRecorder(api, component="scheduler"))
            async with scheduler.factory.running(scheduler.informers):
                pass  # synced caches, then frozen: the binding never shows up in them
            before = api.stats.snapshot()
            await scheduler.sync(f"{NS}/p0")
            await scheduler.sync(f"{NS}/p0")
            sent = Counter(api.stats.snapshot())
            sent.subtract(before)
            assert {k: n for k, n in sent.items() if n} == {
                ("update", "resourceclaims", 200): 1,  # the finalizer
                ("update/status", "resourceclaims", 200): 1,  # allocation and reservedFor
                ("post", "pods", 201): 1,  # the one binding
            }
            bound = await api.get(PODS, "p0", NS)
            assert bound["spec"]["nodeName"] == "n0"
        finally:
            await api.close()
