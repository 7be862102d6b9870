"""The one-domain-per-node label: compare-and-swap against the API, never a lost update."""

from __future__ import annotations

import copy

import pytest

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.rest import Api
from computedomain.kube.store import Store
from computedomain.kubeletplugin.nodelabel import NodeLabeler
from computedomain.kubeletplugin.ports import Waiting
from tests.integration.kubeletplugin.conftest import World

LABEL = names.COMPUTE_DOMAIN_LABEL


async def test_stale_cache_conflict_is_retried_without_losing_others_changes(
    api: Api, world: World
) -> None:
    node = await api.get(resources.NODES, world.node)
    store = Store()
    store.upsert(copy.deepcopy(node))  # the informer's copy, about to go stale
    changed = copy.deepcopy(node)
    changed["metadata"].setdefault("labels", {})["team"] = "a"  # someone else writes meanwhile
    await api.update(resources.NODES, changed)
    labeler = NodeLabeler(api, world.node, MutationCache(store), lambda uid: None)
    await labeler.ensure("cd-1")
    labels = (await api.get(resources.NODES, world.node))["metadata"]["labels"]
    assert labels == {"team": "a", LABEL: "cd-1"}
    await labeler.ensure("cd-1")  # already ours: no write
    await labeler.release("cd-2")  # not ours: untouched
    assert (await api.get(resources.NODES, world.node))["metadata"]["labels"][LABEL] == "cd-1"
    await labeler.release("cd-1")
    assert (await api.get(resources.NODES, world.node))["metadata"]["labels"] == {"team": "a"}


async def test_another_domain_holds_the_node(api: Api, world: World) -> None:
    await world.set_node_label("cd-other")
    labeler = NodeLabeler(
        api, world.node, MutationCache(Store()), lambda uid: "team-b/other" if uid else None
    )
    with pytest.raises(Waiting) as wait:
        await labeler.ensure("cd-1")
    assert wait.value.reason == (
        f"Node {world.node} belongs to ComputeDomain team-b/other (cd-other); "
        "waiting for it to be released"
    )
    assert str(wait.value) == "label already exists for a different ComputeDomain"
    assert await world.node_label() == "cd-other"


def node_requests(api: Api) -> dict[str, int]:
    """Successful requests on Nodes so far, by verb."""
    return {
        verb: count
        for (verb, plural, code), count in api.stats.snapshot().items()
        if plural == "nodes" and code < 300
    }


async def test_a_release_after_our_own_label_write_is_one_request(api: Api, world: World) -> None:
    """The cached copy (our own write) shows the label: the removal is a compare-and-swap from
    it, with no read first."""
    store = Store()
    store.upsert(await api.get(resources.NODES, world.node))
    labeler = NodeLabeler(api, world.node, MutationCache(store), lambda uid: None)
    await labeler.ensure("cd-1")
    before = node_requests(api)
    await labeler.release("cd-1")
    after = node_requests(api)
    assert after.get("update", 0) - before.get("update", 0) == 1
    assert after.get("get", 0) == before.get("get", 0)
    assert await world.node_label() is None


async def test_a_release_whose_cache_missed_the_label_write_still_removes_it(
    api: Api, world: World
) -> None:
    """A label write that landed although its answer was lost is not in the cached copy: the
    removal finds nothing to do there, reads the Node from the API and removes the label."""
    store = Store()
    store.upsert(await api.get(resources.NODES, world.node))  # taken before the label landed
    await world.set_node_label("cd-1")
    labeler = NodeLabeler(api, world.node, MutationCache(store), lambda uid: None)
    await labeler.release("cd-1")
    assert await world.node_label() is None
    await world.set_node_label("cd-2")
    await labeler.release_unheld({"cd-1"})  # the cache says no label; the API says cd-2
    assert await world.node_label() is None
