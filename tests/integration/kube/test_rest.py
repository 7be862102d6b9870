"""The REST helpers against the embedded API server: every verb, every patch type, delete
preconditions and propagation, for a built-in resource and a custom one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from computedomain.kube import errors, resources
from computedomain.kube.rest import Api, PatchType
from computedomain.runtime.clock import ManualClock
from tests.support.polling import eventually


def config_map(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "t"}},
        "data": dict(data),
    }


def compute_domain(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": f"{name}-rct"}}},
    }


async def test_config_map_every_verb(api: Api, namespace: str) -> None:
    created = await api.create(resources.CONFIG_MAPS, config_map("a", namespace, k="1"))
    assert created["metadata"]["uid"]
    with pytest.raises(errors.AlreadyExists):
        await api.create(resources.CONFIG_MAPS, config_map("a", namespace))

    got = await api.get(resources.CONFIG_MAPS, "a", namespace)
    assert got["data"] == {"k": "1"}

    got["data"]["k"] = "2"
    updated = await api.update(resources.CONFIG_MAPS, got)
    assert updated["data"] == {"k": "2"}
    with pytest.raises(errors.Conflict):
        await api.update(resources.CONFIG_MAPS, got)  # stale resourceVersion

    listed = await api.list(resources.CONFIG_MAPS, namespace, label_selector="app=t")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a"]
    assert listed["items"][0]["kind"] == "ConfigMap"  # type meta filled in on list items
    assert listed["metadata"]["resourceVersion"]

    await api.delete(resources.CONFIG_MAPS, "a", namespace)
    with pytest.raises(errors.NotFound):
        await api.get(resources.CONFIG_MAPS, "a", namespace)
    with pytest.raises(errors.NotFound):
        await api.delete(resources.CONFIG_MAPS, "a", namespace)


@pytest.mark.parametrize(
    ("patch_type", "patch"),
    [
        (PatchType.MERGE, {"data": {"k": "merged"}}),
        (PatchType.STRATEGIC, {"data": {"k": "strategic"}}),
        (PatchType.JSON, [{"op": "replace", "path": "/data/k", "value": "json"}]),
        # Server-side apply's Content-Type is checked on the wire (tests/unit/kube/
        # test_rest_wire.py); the embedded server does not implement apply yet.
    ],
    ids=lambda v: v.name if isinstance(v, PatchType) else None,
)
async def test_each_patch_type_on_a_built_in(
    api: Api, namespace: str, patch_type: PatchType, patch: Any
) -> None:
    await api.create(resources.CONFIG_MAPS, config_map("p", namespace, k="0", other="x"))
    patched = await api.patch(
        resources.CONFIG_MAPS, "p", patch, namespace=namespace, patch_type=patch_type
    )
    assert patched["data"]["k"] == {"MERGE": "merged"}.get(patch_type.name, patch_type.name.lower())
    assert patched["data"]["other"] == "x"


@pytest.mark.usefixtures("crds")
async def test_custom_resource_verbs_status_and_patches(api: Api, namespace: str) -> None:
    cd = await api.create(resources.COMPUTE_DOMAINS, compute_domain("cd", namespace))
    assert cd["kind"] == "ComputeDomain"
    cd["status"] = {"status": "Ready", "nodes": []}
    with_status = await api.update_status(resources.COMPUTE_DOMAINS, cd)
    assert with_status["status"]["status"] == "Ready"

    merged = await api.patch(
        resources.COMPUTE_DOMAINS, "cd", {"metadata": {"labels": {"x": "1"}}}, namespace=namespace
    )
    assert merged["metadata"]["labels"] == {"x": "1"}
    json_patched = await api.patch(
        resources.COMPUTE_DOMAINS,
        "cd",
        [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}],
        namespace=namespace,
        patch_type=PatchType.JSON,
    )
    assert json_patched["metadata"]["annotations"] == {"a": "b"}
    status_patched = await api.patch(
        resources.COMPUTE_DOMAINS,
        "cd",
        {"status": {"status": "NotReady"}},
        namespace=namespace,
        subresource="status",
    )
    assert status_patched["status"]["status"] == "NotReady"
    with pytest.raises(errors.ApiClientError):  # strategic merge is not defined for CRDs
        await api.patch(
            resources.COMPUTE_DOMAINS, "cd", {"metadata": {"labels": {"y": "2"}}},
            namespace=namespace, patch_type=PatchType.STRATEGIC,
        )  # fmt: skip
    items, rv = await api.list_all(resources.COMPUTE_DOMAINS, namespace)
    assert [i["metadata"]["name"] for i in items] == ["cd"]
    assert rv
    await api.delete(resources.COMPUTE_DOMAINS, "cd", namespace)


async def test_delete_preconditions(api: Api, namespace: str) -> None:
    created = await api.create(resources.CONFIG_MAPS, config_map("d", namespace))
    meta = created["metadata"]
    with pytest.raises(errors.Conflict):
        await api.delete(resources.CONFIG_MAPS, "d", namespace, uid="not-the-uid")
    with pytest.raises(errors.Conflict):
        await api.delete(resources.CONFIG_MAPS, "d", namespace, resource_version="1")
    await api.delete(
        resources.CONFIG_MAPS, "d", namespace, uid=meta["uid"],
        resource_version=meta["resourceVersion"],
    )  # fmt: skip
    with pytest.raises(errors.NotFound):
        await api.get(resources.CONFIG_MAPS, "d", namespace)


async def test_delete_propagation(api: Api, namespace: str) -> None:
    async def owner_and_dependent(name: str) -> None:
        owner = await api.create(resources.CONFIG_MAPS, config_map(name, namespace))
        dependent = config_map(f"{name}-dep", namespace)
        dependent["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": name,
             "uid": owner["metadata"]["uid"]},
        ]  # fmt: skip
        await api.create(resources.CONFIG_MAPS, dependent)

    async def exists(name: str) -> bool:
        try:
            await api.get(resources.CONFIG_MAPS, name, namespace)
        except errors.NotFound:
            return False
        return True

    async def gone(name: str) -> bool:
        return not await exists(name)

    await owner_and_dependent("orphan")
    await api.delete(resources.CONFIG_MAPS, "orphan", namespace, propagation="Orphan")
    await eventually(lambda: gone("orphan"), within=10, what="orphan deleted")
    dep = await api.get(resources.CONFIG_MAPS, "orphan-dep", namespace)
    assert not dep["metadata"].get("ownerReferences")

    await owner_and_dependent("bg")
    await api.delete(resources.CONFIG_MAPS, "bg", namespace, propagation="Background")
    await eventually(lambda: gone("bg-dep"), within=10, what="bg-dep deleted")

    await owner_and_dependent("fg")
    answer = await api.delete(resources.CONFIG_MAPS, "fg", namespace, propagation="Foreground")
    assert "foregroundDeletion" in answer["metadata"].get("finalizers", [])
    await eventually(lambda: gone("fg"), within=10, what="fg deleted")
    assert not await exists("fg-dep")


async def test_pagination_and_watch(api: Api, namespace: str) -> None:
    for i in range(5):
        await api.create(resources.CONFIG_MAPS, config_map(f"page-{i}", namespace))
    first = await api.list(resources.CONFIG_MAPS, namespace, limit=2)
    assert len(first["items"]) == 2
    assert first["metadata"]["continue"]
    items, rv = await api.list_all(resources.CONFIG_MAPS, namespace, page_size=2)
    assert sorted(i["metadata"]["name"] for i in items) == [f"page-{i}" for i in range(5)]

    seen: list[tuple[str, str]] = []

    async def watch() -> None:
        async for event in api.watch(resources.CONFIG_MAPS, namespace, resource_version=rv):
            seen.append((event.type, event.object["metadata"]["name"]))
            if event.type == "DELETED":
                return

    watcher = asyncio.create_task(watch())
    await api.patch(resources.CONFIG_MAPS, "page-0", {"data": {"x": "y"}}, namespace=namespace)
    await api.delete(resources.CONFIG_MAPS, "page-1", namespace)
    await asyncio.wait_for(watcher, 10)
    assert seen == [("MODIFIED", "page-0"), ("DELETED", "page-1")]


async def test_request_escape_hatch_and_stats(api: Api, namespace: str) -> None:
    versions = await api.request("GET", "/api")
    assert "v1" in versions["versions"]
    await api.request(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=config_map("raw", namespace)
    )
    await api.get(resources.CONFIG_MAPS, "raw", namespace)
    with pytest.raises(errors.Conflict):
        await api.create(resources.CONFIG_MAPS, config_map("raw", namespace))
    assert api.stats.total(verb="post", resource="configmaps") == 1
    assert api.stats.total(verb="create", code=409) == 1
    assert api.stats.by_verb()["get"] >= 1


async def test_qps_and_burst_limit_what_reaches_the_server(apiserver: Any, namespace: str) -> None:
    from computedomain.kube.client import ClientConfig, connect

    clock = ManualClock()
    limited = await connect(
        ClientConfig(url=apiserver.url, token=apiserver.token, qps=4.0, burst=2), clock=clock
    )
    try:
        tasks = [
            asyncio.create_task(limited.list(resources.CONFIG_MAPS, namespace)) for _ in range(6)
        ]
        await eventually(lambda: limited.stats.total() == 2, what="the burst of 2")
        await eventually(lambda: clock.sleepers == 4, what="4 requests waiting for tokens")
        assert limited.stats.total() == 2
        clock.advance(0.25)  # one token at 4 qps
        await eventually(lambda: limited.stats.total() == 3, what="one more request")
        assert clock.sleepers == 3
        clock.advance(1.0)
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        assert limited.stats.total(verb="list", code=200) == 6
    finally:
        await limited.close()
