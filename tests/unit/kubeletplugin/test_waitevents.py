"""Why a claim waits, as Warning events on its pods: the first report at once, then at most one
per claim and window with the message current then, another kind of problem at once."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from computedomain.kube.events import EventRecorder
from computedomain.kubeletplugin.waitevents import (
    REASON_RETRYING,
    REASON_WAITING,
    REPEAT_AFTER,
    WaitEvents,
)


class Recorded:
    """Stands in for the EventRecorder: keeps (pod name, type, reason, message)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.events.append((obj["metadata"]["name"], type, reason, message))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def claim(uid: str, *pods: str) -> dict[str, Any]:
    reserved = [{"resource": "pods", "name": p, "uid": f"{p}-uid"} for p in pods]
    reserved.append({"apiGroup": "example.com", "resource": "things", "name": "x", "uid": "t"})
    return {"metadata": {"uid": uid, "namespace": "team"}, "status": {"reservedFor": reserved}}


def make() -> tuple[WaitEvents, Recorded, Clock]:
    recorded, clock = Recorded(), Clock()
    return WaitEvents(cast(EventRecorder, recorded), clock=clock), recorded, clock


def test_the_first_report_goes_to_every_pod_of_the_claim_at_once() -> None:
    waits, recorded, _ = make()
    waits.report(claim("c1", "worker-0", "worker-1"), "no daemon pod on this node yet")
    assert recorded.events == [
        ("worker-0", "Warning", REASON_WAITING, "no daemon pod on this node yet"),
        ("worker-1", "Warning", REASON_WAITING, "no daemon pod on this node yet"),
    ]


def test_states_of_one_wait_within_the_window_wait_for_it_then_the_current_one_is_posted() -> None:
    waits, recorded, clock = make()
    c = claim("c1", "worker")
    waits.report(c, "no daemon pod on this node yet")
    for state in ("daemon pod Pending", "daemon pod Running, not Ready"):
        clock.now += 1.0
        waits.report(c, state)
    assert [e[3] for e in recorded.events] == ["no daemon pod on this node yet"]
    clock.now += REPEAT_AFTER
    waits.report(c, "daemon pod Ready, registration pending")
    assert [e[3] for e in recorded.events] == [
        "no daemon pod on this node yet",
        "daemon pod Ready, registration pending",
    ]


def test_a_problem_of_another_kind_is_posted_at_once_and_claims_are_independent() -> None:
    waits, recorded, clock = make()
    waits.report(claim("c1", "a"), "no daemon pod on this node yet")
    clock.now += 0.5
    waits.report(claim("c1", "a"), "IMEX channel 0 is held by claim team/old", waiting=False)
    waits.report(claim("c2", "b"), "no daemon pod on this node yet")
    assert [(e[0], e[2]) for e in recorded.events] == [
        ("a", REASON_WAITING),
        ("a", REASON_RETRYING),
        ("b", REASON_WAITING),
    ]


def test_an_unchanged_reason_is_repeated_after_the_window() -> None:
    waits, recorded, clock = make()
    c = claim("c1", "worker")
    waits.report(c, "daemon pod Pending")
    clock.now += REPEAT_AFTER - 0.01
    waits.report(c, "daemon pod Pending")
    clock.now += 0.01
    waits.report(c, "daemon pod Pending")
    assert len(recorded.events) == 2


@given(
    st.lists(
        st.tuples(
            st.floats(min_value=0.0, max_value=2 * REPEAT_AFTER),
            st.sampled_from(["c1", "c2"]),
            st.booleans(),
            st.sampled_from(["pending", "running", "held"]),
        ),
        max_size=40,
    )
)
def test_posts_per_claim_and_kind_are_a_window_apart_unless_the_kind_changed(
    reports: list[tuple[float, str, bool, str]],
) -> None:
    waits, recorded, clock = make()
    posted: dict[str, list[tuple[float, str]]] = {}
    for step, uid, waiting, message in reports:
        clock.now += step
        before = len(recorded.events)
        waits.report(claim(uid, f"pod-{uid}"), message, waiting)
        kind = REASON_WAITING if waiting else REASON_RETRYING
        history = posted.setdefault(uid, [])
        if len(recorded.events) > before:
            assert recorded.events[-1] == (f"pod-{uid}", "Warning", kind, message)
            history.append((clock.now, kind))
        # What was decided follows the rule, whatever came before.
        last = history[-2] if len(recorded.events) > before and len(history) > 1 else None
        if len(recorded.events) > before and last is not None and last[1] == kind:
            assert clock.now - last[0] >= REPEAT_AFTER
        if len(recorded.events) == before:
            assert history, "a claim's first report is always posted"
            assert history[-1][1] == kind
            assert clock.now - history[-1][0] < REPEAT_AFTER
