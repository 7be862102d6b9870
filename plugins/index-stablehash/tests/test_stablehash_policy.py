"""The ``stable-hash`` index policy: home index from the node name, probing, previous kept."""

from __future__ import annotations

import pytest
from computedomain_index_stablehash import NAME, StableHashIndex, home_index, probe_order
from computedomain_index_stablehash.hooks import plugin

from computedomain.policies import IndexPolicy, IndexRequest, registry

POLICY = StableHashIndex()


def used(*indices: int) -> dict[int, str]:
    return {i: f"other-{i}" for i in indices}


def test_home_indices_are_pinned() -> None:
    # Changing the hash would move every node of every clique after an upgrade: keep these.
    assert home_index("gb200-rack1-node07", 18) == 10
    assert home_index("node-a", 18) == 2
    assert home_index("node-b", 18) == 14
    assert home_index("node-a", 1000) == 516


def test_a_free_home_index_is_taken() -> None:
    assert POLICY.allocate(IndexRequest("gb200-rack1-node07", used=used(0, 1, 2), limit=18)) == 10


def test_a_taken_home_probes_forward() -> None:
    request = IndexRequest("gb200-rack1-node07", used=used(10, 11, 13), limit=18)
    assert POLICY.allocate(request) == 12


def test_probing_wraps_around_the_end() -> None:
    # node-b's home is 14; 14..17 are taken, so the probe continues at 0.
    request = IndexRequest("node-b", used=used(14, 15, 16, 17), limit=18)
    assert POLICY.allocate(request) == 0


def test_the_previous_index_is_kept_when_free() -> None:
    request = IndexRequest("node-a", used=used(0, 1), limit=18, previous=7)
    assert POLICY.allocate(request) == 7


@pytest.mark.parametrize(
    "previous", [2 + 18, -1, 5], ids=["out-of-range", "negative", "taken-by-another"]
)
def test_an_unusable_previous_index_falls_back_to_the_home(previous: int) -> None:
    request = IndexRequest("node-a", used=used(5), limit=18, previous=previous)
    assert POLICY.allocate(request) == 2


@pytest.mark.parametrize("limit", [0, -3], ids=["zero", "negative"])
def test_no_index_space_gives_none(limit: int) -> None:
    assert POLICY.allocate(IndexRequest("node-a", used={}, limit=limit)) is None
    assert list(probe_order("node-a", limit)) == []


def test_a_full_space_gives_none() -> None:
    assert POLICY.allocate(IndexRequest("node-a", used=used(*range(18)), limit=18)) is None


def test_home_index_refuses_an_empty_space() -> None:
    with pytest.raises(ValueError, match="limit must be at least 1, not 0"):
        home_index("node-a", 0)


def test_probe_order_visits_every_index_once_from_home() -> None:
    order = list(probe_order("node-b", 18))
    assert order[0] == 14
    assert sorted(order) == list(range(18))


def test_the_policy_object_is_an_index_policy() -> None:
    assert isinstance(POLICY, IndexPolicy)
    assert POLICY.name == NAME == "stable-hash"


def test_the_hook_registers_the_policy_by_name() -> None:
    policies = registry.load(entry_points=False, extra=[plugin])
    assert "stable-hash" in policies.index.names()
    assert policies.index.get("stable-hash") == StableHashIndex()
