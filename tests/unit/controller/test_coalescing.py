"""The status write window: one write per base window, widening while a domain stays busy."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from computedomain.controller import coalescing
from computedomain.controller.coalescing import Coalescer


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _write_when_allowed(window: Coalescer, clock: _Clock) -> float:
    """A change of "a" that has to wait: defer it, wait out the window, write; the new window."""
    wait = window.wait("a")
    window.deferred("a")
    clock.now += wait
    window.wrote("a")
    return window.current_window("a")


def test_coalescer_allows_one_write_per_window() -> None:
    clock = _Clock()
    window = Coalescer(0.25, clock)
    assert window.wait("a") == 0.0
    window.wrote("a")
    clock.now += 0.1
    assert abs(window.wait("a") - 0.15) < 1e-9
    assert window.wait("b") == 0.0
    clock.now += 0.2
    assert window.wait("a") == 0.0
    window.forget("a")
    assert len(window) == 0


def test_zero_window_never_waits() -> None:
    window = Coalescer(0.0, _Clock(), max_window=2.0)
    window.wrote("a")
    window.deferred("a")
    window.wrote("a")
    assert window.wait("a") == 0.0


def test_a_busy_domain_widens_its_window_up_to_the_cap() -> None:
    clock = _Clock()
    window = Coalescer(0.25, clock, max_window=1.0)
    window.wrote("a")
    widths = []
    for _ in range(5):
        clock.now += 0.01
        assert window.wait("a") > 0
        widths.append(_write_when_allowed(window, clock))
    assert widths == [0.5, 1.0, 1.0, 1.0, 1.0]


def test_a_quiet_domain_goes_back_to_the_base_window() -> None:
    clock = _Clock()
    window = Coalescer(0.25, clock, max_window=2.0)
    window.wrote("a")
    assert _write_when_allowed(window, clock) == 0.5
    clock.now += 5.0
    assert window.wait("a") == 0.0
    window.wrote("a")
    assert window.current_window("a") == 0.25


def test_changes_that_never_wait_but_keep_coming_widen_the_window() -> None:
    """Changes spaced beyond the base window but within the cap (daemons joining one by one)
    are a busy domain too: the window widens, so they are not each written."""
    clock = _Clock()
    window = Coalescer(0.25, clock, max_window=2.0)
    writes = 0
    due: float | None = None
    for _ in range(36):  # a change every 0.5 s for 18 s
        clock.now += 0.5
        if due is not None and due <= clock.now:
            window.wrote("a")
            writes += 1
            due = None
        wait = window.wait("a")
        if wait <= 0:
            window.wrote("a")
            writes += 1
        elif due is None:
            window.deferred("a")
            due = clock.now + wait
    assert window.current_window("a") == 2.0
    assert writes <= 12  # about one per 2 s once widened, against 36 with a fixed window


def test_urgent_writes_wait_for_the_base_window_only() -> None:
    clock = _Clock()
    window = Coalescer(0.25, clock, max_window=2.0)
    window.wrote("a")
    for _ in range(3):
        _write_when_allowed(window, clock)
    assert window.current_window("a") == 2.0
    clock.now += 0.3
    assert window.wait("a") > 1.0
    assert window.wait("a", urgent=True) == 0.0


def test_a_cap_below_the_window_is_the_window() -> None:
    window = Coalescer(0.5, _Clock(), max_window=0.1)
    assert window.max_window == 0.5


@given(
    steps=st.lists(st.tuples(st.floats(min_value=0.0, max_value=3.0), st.booleans()), max_size=60),
    base=st.sampled_from([0.05, 0.25, 1.0]),
    cap=st.sampled_from([0.25, 1.0, 2.0]),
)
def test_writes_follow_the_windows(
    steps: list[tuple[float, bool]], base: float, cap: float
) -> None:
    """Driven as the reconciler drives it (a deferred write re-queues the key for the end of
    the window): writes are never closer than the base window, and no change waits longer
    than the cap."""
    clock = _Clock()
    window = Coalescer(base, clock, max_window=cap)
    writes: list[float] = []
    due: float | None = None  # when the re-queued key comes back
    for gap, urgent in steps:
        target = clock.now + gap
        if due is not None and due <= target:
            clock.now = due
            if window.wait("d") <= 0:  # an urgent change may have been written meanwhile
                window.wrote("d")
                writes.append(clock.now)
            due = None
        clock.now = target
        wait = window.wait("d", urgent=urgent)
        assert wait <= max(base, cap) + 1e-9
        if wait <= 0:
            window.wrote("d")
            writes.append(clock.now)
        else:
            window.deferred("d")
            due = clock.now + wait if due is None else min(due, clock.now + wait)
        assert base <= window.current_window("d") <= max(base, cap)
    for earlier, later in itertools.pairwise(writes):
        assert later - earlier >= base - 1e-9


def _status(global_status: str, **nodes: str | None) -> dict[str, object]:
    return {
        "status": global_status,
        "nodes": [{"name": n, **({"status": s} if s else {})} for n, s in nodes.items()],
    }


def test_turning_ready_is_urgent() -> None:
    assert coalescing.urgent(_status("NotReady", a="NotReady"), _status("Ready", a="Ready"))
    assert coalescing.urgent(None, _status("Ready"))


def test_losing_a_node_or_its_readiness_is_urgent() -> None:
    assert coalescing.urgent(_status("Ready", a="Ready", b="Ready"), _status("NotReady", a="Ready"))
    assert coalescing.urgent(_status("Ready", a="Ready"), _status("NotReady", a="NotReady"))
    # An entry without a status counts as ready.
    assert coalescing.urgent(_status("Ready", a=None), _status("NotReady", a="NotReady"))


def test_nodes_joining_or_an_unchanged_global_status_are_not_urgent() -> None:
    joined = _status("NotReady", a="Ready", b="NotReady")
    assert not coalescing.urgent(_status("Ready", a="Ready"), joined)
    assert not coalescing.urgent(_status("NotReady", a="NotReady"), _status("NotReady", a="Ready"))
    assert not coalescing.urgent(joined, _status("NotReady", a="Ready", b="NotReady", c="NotReady"))
    assert not coalescing.urgent({"status": "Ready", "nodes": "garbage"}, {"status": "NotReady"})
