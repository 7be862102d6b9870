"""The backoff value: doubling to the cap, jitter within its range, bad values named."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain.runtime.backoff import Backoff


def test_doubles_from_the_base_up_to_the_cap() -> None:
    backoff = Backoff(base=0.005, cap=0.04)
    assert [backoff.delay(n) for n in range(6)] == [0.005, 0.01, 0.02, 0.04, 0.04, 0.04]


def test_huge_retry_counts_stay_at_the_cap() -> None:
    assert Backoff(base=1.0, cap=30.0).delay(10**9) == 30.0
    assert Backoff(base=1.0, cap=30.0, factor=1e6).delay(500) == 30.0


@given(
    base=st.floats(0.0, 10.0),
    cap=st.floats(0.0, 100.0),
    low=st.floats(0.0, 2.0),
    spread=st.floats(0.0, 2.0),
    retry=st.integers(-5, 5000),
    seed=st.integers(0, 2**32),
)
def test_every_delay_lies_between_the_jittered_bounds(
    *, base: float, cap: float, low: float, spread: float, retry: int, seed: int
) -> None:
    backoff = Backoff(base=base, cap=cap, jitter=(low, low + spread))
    plain = Backoff(base=base, cap=cap).delay(retry)
    delay = backoff.delay(retry, random.Random(seed))
    assert plain <= cap
    assert plain * low <= delay <= plain * (low + spread) + 1e-12


@given(base=st.floats(0.001, 10.0), cap=st.floats(0.001, 100.0), retry=st.integers(0, 200))
def test_without_jitter_delays_never_shrink(base: float, cap: float, retry: int) -> None:
    backoff = Backoff(base=base, cap=cap)
    assert backoff.delay(retry) <= backoff.delay(retry + 1)


def test_the_same_seed_gives_the_same_delays() -> None:
    backoff = Backoff(base=0.8, cap=30.0, jitter=(1.0, 2.0))
    first = [backoff.delay(n, random.Random(7)) for n in range(8)]
    assert first == [backoff.delay(n, random.Random(7)) for n in range(8)]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"base": -1.0, "cap": 1.0}, "base"),
        ({"base": 1.0, "cap": -1.0}, "cap"),
        ({"base": 1.0, "cap": 1.0, "factor": 0.5}, "factor"),
        ({"base": 1.0, "cap": 1.0, "jitter": (1.5, 1.0)}, "jitter"),
        ({"base": 1.0, "cap": 1.0, "jitter": (-0.5, 1.0)}, "jitter"),
    ],
)
def test_bad_values_are_refused_naming_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Backoff(**kwargs)  # type: ignore[arg-type]
