"""Event de-duplication and the per-object spam filter, on a manual clock."""

from __future__ import annotations

from computedomain.kube.eventcorrelator import Bump, Correlator, Create, Drop, EventKey
from computedomain.kube.events import involved_object, timestamp
from computedomain.runtime.clock import ManualClock


def key(
    message: str = "waiting for daemon", *, name: str = "pod-a", reason: str = "Wait"
) -> EventKey:
    return EventKey(
        involved=("v1", "Pod", "ns", name, f"uid-{name}"),
        type="Warning",
        reason=reason,
        message=message,
        source=("cd-kubelet-plugin", "node-1"),
    )


def stored(name: str, count: int) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "count": count,
        "firstTimestamp": "2027-01-01T00:00:00Z",
    }


def test_repeats_within_the_window_bump_the_existing_event() -> None:
    clock = ManualClock()
    correlator = Correlator(clock=clock, window=600)
    assert correlator.decide(key()) == Create()
    correlator.written(key(), stored("pod-a.1", 1))
    clock.advance(10)
    decision = correlator.decide(key())
    assert decision == Bump("pod-a.1", "ns", 2, "2027-01-01T00:00:00Z")
    correlator.written(key(), stored("pod-a.1", 2))
    assert correlator.decide(key()) == Bump("pod-a.1", "ns", 3, "2027-01-01T00:00:00Z")


def test_different_message_reason_or_object_is_a_new_event() -> None:
    correlator = Correlator(clock=ManualClock())
    correlator.written(key(), stored("pod-a.1", 1))
    assert correlator.decide(key("another message")) == Create()
    assert correlator.decide(key(reason="Other")) == Create()
    assert correlator.decide(key(name="pod-b")) == Create()


def test_after_the_window_a_repeat_starts_a_new_event() -> None:
    clock = ManualClock()
    correlator = Correlator(clock=clock, window=600)
    correlator.written(key(), stored("pod-a.1", 1))
    clock.advance(601)
    assert correlator.decide(key()) == Create()


def test_forget_makes_the_next_one_a_create() -> None:
    correlator = Correlator(clock=ManualClock())
    correlator.written(key(), stored("pod-a.1", 4))
    correlator.forget(key())
    assert correlator.decide(key()) == Create()


def test_a_flapping_object_is_rate_limited_per_object() -> None:
    clock = ManualClock()
    correlator = Correlator(clock=clock, burst=3, qps=1.0 / 300)
    decisions = [correlator.decide(key(f"m{i}")) for i in range(5)]
    assert decisions.count(Drop()) == 2
    assert correlator.decide(key(name="pod-b")) == Create()  # other objects unaffected
    clock.advance(300)
    assert correlator.decide(key("m9")) == Create()  # one token back after 5 minutes


def test_tables_are_bounded() -> None:
    correlator = Correlator(clock=ManualClock(), max_entries=2)
    for i in range(3):
        correlator.written(key(name=f"p{i}"), stored(f"p{i}.1", 1))
    assert correlator.decide(key(name="p0")) == Create()  # evicted
    assert isinstance(correlator.decide(key(name="p2")), Bump)


def test_involved_object_and_timestamp() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "n", "uid": "u", "resourceVersion": "3"},
    }
    assert involved_object(pod) == {
        "apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "n", "uid": "u",
        "resourceVersion": "3",
    }  # fmt: skip
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    assert "namespace" not in involved_object(node)
    assert timestamp(0) == "1970-01-01T00:00:00Z"
