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
