"""The shared informer factory against the embedded server: one list and one watch per shared
resource whatever the number of users, merged indexes, and an informer that runs while anyone
uses it and stops after the last user leaves."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from computedomain.kube import resources
from computedomain.kube.informer import FuncHandler
from computedomain.kube.informerfactory import InformerFactory
from computedomain.kube.rest import Api
from computedomain.kube.store import index_by_label, index_by_namespace
from tests.support.polling import eventually

LABEL = "example.com/team"
BY_TEAM = index_by_label(LABEL)


def cm(name: str, namespace: str, team: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {LABEL: team}},
    }


async def test_users_of_one_resource_share_one_list_watch_and_see_every_event(
    api: Api, namespace: str
) -> None:
    factory = InformerFactory(api)
    first = factory.informer(resources.CONFIG_MAPS, indexers={"team": BY_TEAM})
    second = factory.informer(resources.CONFIG_MAPS, indexers={"namespace": index_by_namespace})
    assert first is second
    seen: dict[str, list[str]] = {"a": [], "b": []}
    for user in seen:
        first.add_handler(FuncHandler(add=lambda o, u=user: seen[u].append(o["metadata"]["name"])))
    lists, watches = api.stats.total(verb="list"), api.stats.total(verb="watch")
    async with factory.running([first]), factory.running([second]):
        await api.create(resources.CONFIG_MAPS, cm("x", namespace, "red"), namespace)
        await eventually(lambda: all("x" in names for names in seen.values()), what="the add")
        # Both users' indexes answer, over one store.
        assert [o["metadata"]["name"] for o in second.store.by_index("team", "red")] == ["x"]
        assert [o["metadata"]["name"] for o in first.store.by_index("namespace", namespace)] == [
            "x"
        ]
    assert api.stats.total(verb="list") - lists == 1
    assert api.stats.total(verb="watch") - watches == 1


async def test_different_namespaces_or_selectors_get_their_own_informer(api: Api) -> None:
    factory = InformerFactory(api)
    everywhere = factory.informer(resources.CONFIG_MAPS)
    assert factory.informer(resources.CONFIG_MAPS, namespace="a") is not everywhere
    assert factory.informer(resources.CONFIG_MAPS, label_selector=f"{LABEL}=red") is not everywhere
    assert factory.informer(resources.CONFIG_MAPS, field_selector="metadata.name=x") is not (
        everywhere
    )
    assert factory.informer(resources.SECRETS) is not everywhere
    assert factory.informer(resources.CONFIG_MAPS) is everywhere


async def test_one_index_name_for_two_functions_is_refused_at_wiring_time(api: Api) -> None:
    factory = InformerFactory(api)
    factory.informer(resources.CONFIG_MAPS, indexers={"team": BY_TEAM})
    factory.informer(resources.CONFIG_MAPS, indexers={"team": BY_TEAM})  # the same function: fine
    with pytest.raises(ValueError, match="index 'team' is already registered"):
        factory.informer(resources.CONFIG_MAPS, indexers={"team": index_by_namespace})


async def test_an_informer_runs_until_its_last_user_leaves(api: Api, namespace: str) -> None:
    factory = InformerFactory(api)
    informer = factory.informer(resources.CONFIG_MAPS, namespace=namespace)
    names: list[str] = []
    informer.add_handler(FuncHandler(add=lambda o: names.append(o["metadata"]["name"])))
    leaving = asyncio.Event()

    async def short_user() -> None:
        async with factory.running([informer]):
            await leaving.wait()

    async with factory.running([informer]):
        user = asyncio.create_task(short_user())
        await eventually(lambda: factory.running_informers() == [informer], what="running")
        leaving.set()
        await user
        # The other user is still there: events keep arriving.
        await api.create(resources.CONFIG_MAPS, cm("after", namespace, "blue"), namespace)
        await eventually(lambda: "after" in names, what="an event after one user left")
    assert factory.running_informers() == []
    # Started again, it resumes from where it stopped and catches up.
    await api.create(resources.CONFIG_MAPS, cm("later", namespace, "blue"), namespace)
    async with factory.running([informer]):
        await eventually(lambda: "later" in names, what="the event missed while stopped")


async def test_an_informer_from_elsewhere_is_refused(api: Api) -> None:
    ours, theirs = InformerFactory(api), InformerFactory(api)
    foreign = theirs.informer(resources.CONFIG_MAPS)
    with pytest.raises(ValueError, match="not made by this factory"):
        async with ours.running([foreign]):
            pass
