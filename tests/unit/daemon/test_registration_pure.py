"""The pure parts of registration: the conflict backoff, the read-your-writes holder."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain.daemon import reconcile, registration
from computedomain.daemon.reconcile import LatestObject


def obj(rv: str | None) -> dict[str, object]:
    return {"metadata": {"resourceVersion": rv} if rv is not None else {}}


@given(st.integers(1, 40), st.integers(0, 40), st.floats(0.001, 0.02), st.integers(0, 2**32))
def test_the_conflict_wait_stays_in_its_window(
    attempt: int, contenders: int, slot: float, seed: int
) -> None:
    delay = registration.conflict_delay(attempt, contenders, slot, random.Random(seed))
    window = slot * 2 * max(contenders, 1) * 2 ** max(attempt - 2, 0)
    assert 0 <= delay <= min(window, registration.MAX_DELAY)


def test_the_window_grows_with_contenders_and_conflicts() -> None:
    def mean(attempt: int, contenders: int) -> float:
        rng = random.Random(1)
        return (
            sum(registration.conflict_delay(attempt, contenders, 0.01, rng) for _ in range(2000))
            / 2000
        )

    assert mean(1, 17) == pytest.approx(0.17, rel=0.1)  # half of 2 * 17 slots
    assert mean(1, 1) == pytest.approx(0.01, rel=0.1)
    assert mean(2, 17) == pytest.approx(0.17, rel=0.1)  # the slot follows the trips instead
    assert mean(3, 17) == pytest.approx(0.34, rel=0.1)  # the guard: doubling from the third
    assert mean(30, 17) == pytest.approx(registration.MAX_DELAY / 2, rel=0.1)


trips = st.floats(0.0, 10.0, allow_nan=False)


@given(st.floats(registration.MIN_SLOT, registration.MAX_SLOT), trips)
def test_the_slot_moves_towards_each_trip_and_stays_bounded(slot: float, took: float) -> None:
    new = registration.next_slot(slot, took)
    assert registration.MIN_SLOT <= new <= registration.MAX_SLOT
    bounded = min(max(took, registration.MIN_SLOT), registration.MAX_SLOT)
    assert min(slot, bounded) - 1e-12 <= new <= max(slot, bounded) + 1e-12


@given(trips)
def test_one_stalled_first_trip_does_not_stretch_the_windows_to_seconds(took: float) -> None:
    """From the 20 ms start, one trip moves the slot less than a third of the way, so the
    window for a whole clique of 18 after it stays under 3.5 s even if that trip stalled."""
    slot = registration.next_slot(registration.FIRST_SLOT, took)
    assert 2 * 18 * slot < 3.5


@given(st.lists(trips, min_size=1, max_size=20), st.floats(0.001, 0.25))
def test_the_slot_forgets_a_busy_moment(busy: list[float], calm: float) -> None:
    """After a burst of slow trips, ten fast ones bring the slot within 10 ms of their time:
    a daemon does not keep sleeping in windows sized for a load that has passed."""
    slot = registration.FIRST_SLOT
    for took in busy:
        slot = registration.next_slot(slot, took)
    for _ in range(10):
        slot = registration.next_slot(slot, calm)
    assert slot == pytest.approx(calm, abs=0.01)


def test_upstreams_retry_backoff() -> None:
    rng = random.Random(2)
    for failures, base in [(0, 0.005), (1, 0.01), (4, 0.08), (20, 6.0)]:
        delay = reconcile.RETRY_BACKOFF.delay(failures, rng)
        assert base * 0.75 <= delay <= base * 1.25


def test_resource_versions_are_compared_as_integers() -> None:
    assert registration.resource_version(obj("10")) == 10
    assert registration.resource_version(obj("abc")) is None
    assert registration.resource_version(obj(None)) is None
    assert registration.resource_version(None) is None


def test_the_newest_version_wins_whoever_delivers_it() -> None:
    latest = LatestObject()
    assert latest.offer(obj("10"))
    assert latest.offer(obj("9")) is False  # a late watch event after our own write
    assert latest.get() == obj("10")
    assert latest.offer(obj("11"))
    latest.deleted(obj("10"))  # a stale delete does not hide the newer object
    assert latest.get() == obj("11")
    latest.deleted(obj("12"))
    assert latest.get() is None
