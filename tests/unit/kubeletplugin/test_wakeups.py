"""Which wake-up keys an informer change rings: the node it concerns, or the whole domain."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from computedomain.kubeletplugin.cluster import wake_handlers
from computedomain.kubeletplugin.wakeups import (
    NODE_KEY,
    Wakeups,
    changed_entries,
    domain_key,
    domain_node_key,
)

UID = "0f6c9a52-1111-2222-3333-444455556666"


class Recorder(Wakeups):
    def __init__(self) -> None:
        super().__init__()
        self.rung: list[str] = []

    def notify(self, key: str) -> None:
        self.rung.append(key)
        super().notify(key)


def _domain(nodes: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"uid": UID, "name": "cd", "namespace": "u"},
        "spec": {"numNodes": 0, **spec},
        "status": {"status": "NotReady", "nodes": nodes},
    }


def _clique(daemons: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{UID}.clique-a",
            "labels": {"resource.nvidia.com/computeDomain": UID},
        },
        "daemons": daemons,
    }


def _entry(node: str, status: str, field: str = "nodeName") -> dict[str, Any]:
    return {field: node, "status": status, "index": 0}


def _entries(states: dict[str, str]) -> list[dict[str, Any]]:
    return [_entry(node, status) for node, status in states.items()]


entries = st.dictionaries(
    st.sampled_from(["n0", "n1", "n2", "n3"]), st.sampled_from(["Ready", "NotReady"])
)


@given(old=entries, new=entries)
def test_changed_entries_are_exactly_the_differing_ones(
    old: dict[str, str], new: dict[str, str]
) -> None:
    changed = changed_entries(_entries(old), _entries(new), "nodeName")
    assert changed == {n for n in old.keys() | new.keys() if old.get(n) != new.get(n)}


def test_changed_entries_ignore_what_is_not_a_list_of_entries() -> None:
    assert changed_entries(None, "junk", "nodeName") == set()
    assert changed_entries([1, {"nodeName": ""}], [{"nodeName": "a"}], "nodeName") == {"a"}


def test_a_clique_entry_change_wakes_only_that_nodes_waiters() -> None:
    rec = Recorder()
    handlers = wake_handlers(rec)
    old = _clique([_entry("n0", "NotReady"), _entry("n1", "NotReady")])
    new = _clique([_entry("n0", "NotReady"), _entry("n1", "Ready")])
    handlers.cliques.on_update(old, new)
    assert rec.rung == [domain_node_key(UID, "n1")]


def test_a_status_entry_change_wakes_that_node_and_a_spec_change_the_whole_domain() -> None:
    rec = Recorder()
    handlers = wake_handlers(rec)
    before = _domain([_entry("n0", "NotReady", "name")])
    handlers.domains.on_update(before, _domain([_entry("n0", "Ready", "name")]))
    assert rec.rung == [domain_node_key(UID, "n0")]
    rec.rung.clear()
    handlers.domains.on_update(before, _domain([_entry("n0", "NotReady", "name")], numNodes=2))
    assert rec.rung == [domain_key(UID)]
    rec.rung.clear()
    handlers.domains.on_update(before, before)  # a resync
    assert rec.rung == []


def test_appearing_and_going_objects_wake_the_whole_domain() -> None:
    rec = Recorder()
    handlers = wake_handlers(rec)
    handlers.cliques.on_add(_clique([]))
    handlers.domains.on_delete(_domain([]))
    pod = {
        "metadata": {"labels": {"resource.nvidia.com/computeDomain": UID}},
        "spec": {"nodeName": "n2"},
    }
    handlers.pods.on_add(pod)
    handlers.node.on_update({}, {})
    assert rec.rung == [
        domain_key(UID),
        domain_key(UID),
        domain_node_key(UID, "n2"),
        NODE_KEY,
    ]


async def test_a_waiter_wakes_on_its_node_key_and_not_on_a_peers() -> None:
    wakeups = Wakeups()
    keys = (domain_key(UID), domain_node_key(UID, "n0"))
    waiter = asyncio.ensure_future(wakeups.wait(keys, 5.0))
    await asyncio.sleep(0)
    wakeups.notify(domain_node_key(UID, "n1"))
    await asyncio.sleep(0)
    assert not waiter.done()
    wakeups.notify(domain_node_key(UID, "n0"))
    assert await waiter is True


async def test_the_first_of_several_keys_ends_the_wait() -> None:
    """A waiting channel claim listens for its node and for its whole domain; either ends the
    wait (not both: the node's daemon turning Ready must not wait for a domain-wide change)."""
    wakeups = Wakeups()
    node = domain_node_key(UID, "n1")
    waiting = asyncio.ensure_future(wakeups.wait([domain_key(UID), node], 600.0))
    await asyncio.sleep(0)  # let it register
    wakeups.notify(node)
    async with asyncio.timeout(10):  # a deadline far inside the 600 s wait
        assert await waiting is True
