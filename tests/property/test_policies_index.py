"""Index policies (invariants A1-A4, docs/compatibility.md#membership-invariants), for every
policy in the ``computedomain`` group.

The contract every policy must keep is the part of A1-A3 that uniqueness rests on: never an
index in use, always in ``[0, limit)``, None exactly when the space is full, and the same answer
whatever the order of ``used``. The built-in ``lowest-free`` must also give the minimum (A1 in
full). A4 is a property of our allocator around the policy (status mode counts only the own
clique). A policy that breaks the contract is shown to fail the same checks.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computedomain.api.models import DaemonInfo
from computedomain.daemon import membership
from computedomain.policies import builtins, registry
from computedomain.policies.hookspecs import IndexPolicy, IndexRequest, hookimpl

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
POLICIES = registry.load().index
CLIQUE = "7c5a1f4e-2b8d-4e6a-9f3c-1d2e3f4a5b6c.1"


@st.composite
def requests(draw: st.DrawFn) -> IndexRequest:
    limit = draw(st.integers(min_value=0, max_value=20))
    used_indices = draw(st.lists(st.integers(min_value=0, max_value=24), max_size=24))
    previous = draw(st.none() | st.integers(min_value=-1, max_value=24))
    used = {i: f"node-{i}" for i in used_indices}
    return IndexRequest(node_name="me", used=used, limit=limit, previous=previous)


def check_contract(policy: IndexPolicy) -> None:
    """Run the contract checks against ``policy``; raises AssertionError on a violation."""

    @SETTINGS
    @given(requests(), st.randoms(use_true_random=False))
    def contract(request: IndexRequest, rnd: object) -> None:
        answer = policy.allocate(request)
        full = all(i in request.used for i in range(request.limit))
        if answer is None:
            assert full, f"{policy.name} found no index though one is free"
            return
        assert not full, f"{policy.name} returned {answer} though the space is full"
        assert isinstance(answer, int)
        assert 0 <= answer < request.limit  # A2
        assert answer not in request.used  # A1: never an index in use
        items = list(request.used.items())
        rnd.shuffle(items)  # type: ignore[attr-defined]
        shuffled = attrs.evolve(request, used=dict(items))
        assert policy.allocate(shuffled) == answer  # A3: order does not matter
        assert policy.allocate(request) == answer  # pure: same input, same answer

    contract()


@pytest.mark.parametrize("name", POLICIES.names())
def test_every_registered_index_policy_keeps_the_contract(name: str) -> None:
    check_contract(POLICIES.get(name))


@SETTINGS
@given(requests())
def test_lowest_free_returns_the_minimum_free_index(request: IndexRequest) -> None:
    answer = POLICIES.get(builtins.LOWEST_FREE).allocate(request)
    free = [i for i in range(request.limit) if i not in request.used]
    if request.previous in free:  # a remembered index comes back while free (not churned)
        assert answer == request.previous
    else:
        assert answer == (free[0] if free else None)  # A1, A2 (max=0 always fails)


@attrs.frozen
class AlwaysZero:
    """A deliberately broken policy: every daemon gets index 0."""

    name: str = "always-zero"

    def allocate(self, request: IndexRequest) -> int | None:
        return 0


class BrokenPlugin:
    @hookimpl
    def computedomain_index_policies(self) -> Sequence[IndexPolicy]:
        return (AlwaysZero(),)


def test_a_broken_policy_fails_the_contract() -> None:
    broken = registry.load(extra=[BrokenPlugin()]).index.get("always-zero")
    # Hypothesis reports one failure, or a group when it finds several distinct ones.
    with pytest.raises((AssertionError, ExceptionGroup)) as info:
        check_contract(broken)
    found = info.value.exceptions if isinstance(info.value, ExceptionGroup) else (info.value,)
    assert all(isinstance(error, AssertionError) for error in found)


@st.composite
def mixed_entries(draw: st.DrawFn) -> tuple[list[DaemonInfo], list[DaemonInfo]]:
    """Entries of the own clique, and others' (another clique, or no fabric: index -1)."""
    own = draw(st.lists(st.integers(min_value=0, max_value=7), unique=True, max_size=8))
    others = draw(
        st.lists(
            st.tuples(st.sampled_from(["", CLIQUE[:-1] + "2"]), st.integers(-1, 7)), max_size=6
        )
    )
    mine = [DaemonInfo(f"n{i}", f"10.0.0.{i}", CLIQUE, index=i) for i in own]
    theirs = [
        DaemonInfo(f"x{k}", f"10.1.0.{k}", clique, index=-1 if not clique else index)
        for k, (clique, index) in enumerate(others)
    ]
    return mine, theirs


@pytest.mark.parametrize("name", POLICIES.names())
def test_status_mode_counts_only_the_own_clique(name: str) -> None:
    policy = POLICIES.get(name)
    scope = membership.Scope(limit=8, clique_id=CLIQUE)
    op = membership.Register("me", "10.0.0.99", CLIQUE, pod_uid="u")

    @SETTINGS
    @given(mixed_entries(), st.randoms(use_true_random=False))
    def a4(entries: tuple[list[DaemonInfo], list[DaemonInfo]], rnd: object) -> None:
        mine, theirs = entries

        def outcome(items: list[DaemonInfo]) -> object:
            try:
                return membership.allocate(items, op, policy=policy, scope=scope)
            except membership.IndexSpaceFull:
                return "full"

        mixed = mine + theirs
        rnd.shuffle(mixed)  # type: ignore[attr-defined]
        assert outcome(mixed) == outcome(mine)  # A4 (and A3 on the list order)

    a4()
