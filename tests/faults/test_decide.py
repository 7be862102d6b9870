"""Decisions: seeded and reproducible per request, scoped, and at the rates the spec asks."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain_sim.faults import decide, spec
from tests.faults import settings as suite


def request(verb: str = "update", resource: str = "nodes", **kw: str) -> decide.Request:
    return decide.Request(verb=verb, resource=resource, path=f"/api/v1/{resource}/n1", **kw)


def outcomes(fault_spec: spec.FaultSpec, req: decide.Request, n: int, seed: int) -> Counter[str]:
    found: Counter[str] = Counter()
    for occurrence in range(n):
        d = decide.decide(fault_spec, req, occurrence, seed)
        found[d.error or d.watch or "none"] += 1
    return found


def test_rates_are_close_to_the_spec() -> None:
    fault_spec = spec.parse("409=0.1,429=0.2,500=0.05")
    seen = outcomes(fault_spec, request(), 4000, seed=1)
    assert 300 < seen["409"] < 500
    assert 700 < seen["429"] < 900
    assert 130 < seen["500"] < 270


def test_409_only_on_compare_and_swap_and_504_only_on_writes() -> None:
    fault_spec = spec.parse("409=0.5,504=0.5")
    assert set(outcomes(fault_spec, request("get"), 200, 3)) == {"none"}
    assert set(outcomes(fault_spec, request("create"), 200, 3)) == {"504", "none"}
    assert set(outcomes(fault_spec, request("patch"), 200, 3)) == {"409", "504"}


@pytest.mark.parametrize(
    ("scope", "req", "hit"),
    [
        ("resources=nodes", request(resource="nodes"), True),
        ("resources=nodes", request(resource="pods"), False),
        ("resources=pods/status", request(resource="pods/status"), True),
        ("resources=pods/status", request(resource="pods"), False),
        ("verbs=writes", request("update"), True),
        ("verbs=reads", request("update"), False),
        ("namespaces=a", request(namespace="a"), True),
        ("namespaces=a", request(namespace=""), False),
        ("users=system:serviceaccount:*", request(user="system:serviceaccount:x:y"), True),
        ("users=system:serviceaccount:*", request(user="admin"), False),
        ("users=admin", request(), False),  # the user is unknown: no match
        ("agents=compute-domain-*", request(agent="compute-domain-kubelet-plugin"), True),
        ("agents=compute-domain-*", request(agent="kubectl/v1.33"), False),
    ],
)  # fmt: skip
def test_scope(scope: str, req: decide.Request, hit: bool) -> None:
    d = decide.decide(spec.parse(f"500=1,{scope}"), req, 0, seed=5)
    assert (d.error == "500") is hit


def test_first_rule_with_an_error_wins_and_latencies_add_up() -> None:
    fault_spec = spec.parse("429=1,latency=10ms;500=1,latency=20ms")
    d = decide.decide(fault_spec, request(), 0, seed=9)
    assert d.error == "429"
    assert d.latency == pytest.approx(0.03)
    assert d.retry_after == 1.0


def test_watch_faults_only_on_watches_at_a_moment_in_range() -> None:
    fault_spec = spec.parse("watch-drop=0.5,watch-expire=0.5,watch-after=100ms..200ms")
    assert set(outcomes(fault_spec, request("list"), 100, 2)) == {"none"}
    seen = outcomes(fault_spec, request("watch"), 400, 2)
    assert set(seen) == {decide.DROP, decide.EXPIRE}
    for occurrence in range(50):
        d = decide.decide(fault_spec, request("watch"), occurrence, 2)
        assert 0.1 <= d.watch_after <= 0.2


@settings(max_examples=suite.examples(50, 400), deadline=None)
@given(
    seed=st.integers(0, 2**31),
    occurrence=st.integers(0, 10_000),
    verb=st.sampled_from(spec.VERBS),
    other=st.text(max_size=20),
)
def test_a_decision_depends_only_on_seed_request_and_occurrence(
    seed: int, occurrence: int, verb: str, other: str
) -> None:
    fault_spec = spec.parse(
        "409=0.2,429=0.2,500=0.1,504=0.1,latency=0..50ms,latency-rate=0.5,"
        "watch-drop=0.3,watch-expire=0.2"
    )
    req = request(verb)
    first = decide.decide(fault_spec, req, occurrence, seed)
    # Other requests in between (and any interleaving of them) change nothing.
    decide.decide(fault_spec, request(verb, resource="pods", agent=other), occurrence, seed)
    assert decide.decide(fault_spec, req, occurrence, seed) == first
    if first.error is not None:
        assert decide.applies(first.error, verb)
    assert 0.0 <= first.latency <= 0.05
    assert first.watch is None or verb == "watch"


def test_adding_a_kind_does_not_shift_the_others() -> None:
    base = spec.parse("watch-drop=0.3,latency=0..50ms")
    more = spec.parse("watch-drop=0.3,latency=0..50ms,409=0.5")
    for occurrence in range(200):
        a = decide.decide(base, request("watch"), occurrence, 11)
        b = decide.decide(more, request("watch"), occurrence, 11)
        assert (a.watch, a.latency, a.watch_after) == (b.watch, b.latency, b.watch_after)
