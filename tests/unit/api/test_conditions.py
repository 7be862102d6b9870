"""Ready-condition bookkeeping keeps lastTransitionTime until the status really changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from computedomain.api import conditions
from computedomain.api.models import ConditionStatus

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def test_transition_time_moves_only_on_status_change() -> None:
    first = conditions.set_condition(
        (), type="Ready", status=ConditionStatus.FALSE, reason="A", message="a", now=T0
    )
    assert first[0].last_transition_time == "2026-11-30T12:00:00Z"
    same = conditions.set_condition(
        first,
        type="Ready",
        status=ConditionStatus.FALSE,
        reason="B",
        message="b",
        now=T0 + timedelta(minutes=1),
    )
    assert same[0].last_transition_time == "2026-11-30T12:00:00Z"
    assert same[0].reason == "B"
    flipped = conditions.set_condition(
        same,
        type="Ready",
        status=ConditionStatus.TRUE,
        reason="Ready",
        message="ok",
        now=T0 + timedelta(minutes=2),
    )
    assert flipped[0].last_transition_time == "2026-11-30T12:02:00Z"
    assert conditions.find(flipped, "Ready") == flipped[0]
    assert not conditions.same_except_time(same, flipped)
    assert conditions.same_except_time(first, first)
