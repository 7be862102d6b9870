"""Hypothesis properties of ``stable-hash``: the index contract, home-first, and rejoin stability.

The project's suite in ``tests/property`` checks the generic contract for every registered
policy; these add what is particular to this one (the answer is the first free index in the
node's probe order, ``previous`` wins when free) and a join/leave history checked against the
uniqueness every clique relies on.
"""

from __future__ import annotations

import random

import attrs
from computedomain_index_stablehash import StableHashIndex, home_index, probe_order
from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain.policies import IndexRequest

POLICY = StableHashIndex()
SETTINGS = settings(max_examples=150, deadline=None)

node_names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)


@st.composite
def requests(draw: st.DrawFn) -> IndexRequest:
    limit = draw(st.integers(min_value=0, max_value=24))
    indices = draw(st.sets(st.integers(min_value=0, max_value=30), max_size=30))
    previous = draw(st.none() | st.integers(min_value=-2, max_value=30))
    return IndexRequest(
        node_name=draw(node_names),
        used={i: f"peer-{i}" for i in indices},
        limit=limit,
        previous=previous,
    )


@SETTINGS
@given(requests(), st.randoms(use_true_random=False))
def test_the_answer_is_free_in_range_and_none_only_when_full(
    request: IndexRequest, rnd: random.Random
) -> None:
    answer = POLICY.allocate(request)
    free = [i for i in range(request.limit) if i not in request.used]
    if answer is None:
        assert free == []
        return
    assert answer in free
    items = list(request.used.items())
    rnd.shuffle(items)
    assert POLICY.allocate(attrs.evolve(request, used=dict(items))) == answer


@SETTINGS
@given(requests())
def test_previous_wins_when_free_else_the_first_free_in_probe_order(request: IndexRequest) -> None:
    answer = POLICY.allocate(request)
    free = {i for i in range(request.limit) if i not in request.used}
    if request.previous in free:
        assert answer == request.previous
    else:
        expected = next(
            (i for i in probe_order(request.node_name, request.limit) if i in free), None
        )
        assert answer == expected


@SETTINGS
@given(node_names, st.integers(min_value=1, max_value=64), st.data())
def test_a_free_home_is_always_granted(node: str, limit: int, data: st.DataObject) -> None:
    home = home_index(node, limit)
    others = data.draw(st.sets(st.integers(0, limit - 1).filter(lambda i: i != home)))
    request = IndexRequest(node, used={i: f"peer-{i}" for i in others}, limit=limit)
    assert POLICY.allocate(request) == home


@SETTINGS
@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 11)), max_size=60),
    st.integers(min_value=1, max_value=8),
)
def test_join_leave_histories_keep_indices_unique_and_homes_stable(
    steps: list[tuple[bool, int]], limit: int
) -> None:
    """Nodes of a pool join (when absent) and leave (when present) in random order."""
    clique: dict[str, int] = {}  # node name -> index, as in a ComputeDomainClique
    for joins, n in steps:
        node = f"rack1-node{n:02d}"
        if not joins or node in clique:
            clique.pop(node, None)
            continue
        used = {index: name for name, index in clique.items()}
        answer = POLICY.allocate(IndexRequest(node, used=used, limit=limit))
        if answer is None:
            assert len(clique) == limit
            continue
        if home_index(node, limit) not in used:
            assert answer == home_index(node, limit)  # rejoining with a free home: same index
        clique[node] = answer
        assert len(set(clique.values())) == len(clique)
        assert all(0 <= i < limit for i in clique.values())
