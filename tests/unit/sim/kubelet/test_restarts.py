"""Restart policy and CrashLoopBackOff delays."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain_sim.kubelet.restarts import Backoff, should_restart


@pytest.mark.parametrize(
    ("policy", "code", "expected"),
    [
        ("Always", 0, True),
        ("Always", 1, True),
        ("OnFailure", 0, False),
        ("OnFailure", 137, True),
        ("Never", 1, False),
    ],
)
def test_should_restart(policy: str, code: int, expected: bool) -> None:
    assert should_restart(policy, code) is expected


def test_kubelet_delays_double_up_to_the_cap() -> None:
    backoff = Backoff()
    assert [backoff.delay(n) for n in range(1, 8)] == [10, 20, 40, 80, 160, 300, 300]


def test_streak_restarts_after_a_long_run() -> None:
    backoff = Backoff(base=1, cap=8, reset_after=60)
    assert backoff.next_streak(4, ran_for=5) == 5
    assert backoff.next_streak(4, ran_for=61) == 1


@given(st.integers(min_value=1, max_value=200))
def test_delay_is_monotonic_and_bounded(n: int) -> None:
    backoff = Backoff(base=0.5, cap=30)
    assert 0.5 <= backoff.delay(n) <= 30
    assert backoff.delay(n) <= backoff.delay(n + 1)
