"""At most one status write per domain per window; the window widens while a domain is busy.

Daemon pods and clique entries of a domain change in bursts (a rack of daemons starting
together, each joining, then turning Ready); each change triggers a reconcile, and each
reconcile may want to write the domain's status. :class:`Coalescer` remembers when each domain's
status was last written; a reconcile that wants to write sooner defers the write and re-queues
its key for the end of the window, where the latest state is written once.

A fixed window still costs a forming domain one write per window for as long as the burst
lasts, so the window adapts: each write that had to wait for its window, or that comes less than
``max_window`` after the domain's previous write, doubles the domain's window, up to
``max_window`` (default 2 s, upstream's status poll period, so the lag is never worse than
upstream's); a write that comes ``max_window`` or more after the previous one (the domain was
quiet) resets it to ``window``. "Quiet" is judged against ``max_window``, not the base window:
on a loaded cluster daemons join one every half second or so, each change too far from the last
to wait for a short window, yet together a burst.

Changes that users wait on are *urgent*: they only wait for the base window. That is the
domain's global status turning Ready, or turning NotReady because a node it had lost its
readiness or left (:func:`urgent`). A domain turning NotReady only because nodes joined that
are not Ready yet is not urgent: with ``numNodes: 0`` (the default) a forming domain's status
goes Ready, NotReady, Ready... as its nodes join one by one, and writing each of those at once
would be most of the controller's writes while domains form (``bench/scale.py`` counts them).
So the guarantee stays "at most one write per domain per ``window``", a quiet domain's change is
written at once, and a burst costs a handful of writes instead of one per window.

The first write of a domain is never delayed. Used by
:mod:`computedomain.controller.reconciling` (wait, deferred) and
:mod:`computedomain.controller.applying` (wrote); time comes from an injected monotonic clock
function (a clock's ``monotonic`` in tests).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from computedomain.api.models import Status


@attrs.define
class _Domain:
    last: float
    window: float
    deferred: bool = False


def urgent(based_on: Mapping[str, Any] | None, status: Mapping[str, Any]) -> bool:
    """Whether writing ``status`` over ``based_on`` (wire form) must not wait for a widened
    window (see the module doc). Pure."""
    before = based_on or {}
    if status.get("status") == before.get("status"):
        return False
    if status.get("status") == Status.READY.value:
        return True
    not_ready = Status.NOT_READY.value
    now = _node_statuses(status)
    return any(
        state != not_ready and now.get(name, not_ready) == not_ready
        for name, state in _node_statuses(before).items()
    )


def _node_statuses(status: Mapping[str, Any]) -> dict[Any, Any]:
    nodes = status.get("nodes")
    return {
        n.get("name"): n.get("status")
        for n in (nodes if isinstance(nodes, list) else ())
        if isinstance(n, dict)
    }


class Coalescer:
    """Per-domain bookkeeping of the last status write. Single event loop."""

    def __init__(
        self,
        window: float,
        monotonic: Callable[[], float] = time.monotonic,
        *,
        max_window: float | None = None,
    ) -> None:
        self.window = window
        self.max_window = window if max_window is None else max(window, max_window)
        self._now = monotonic
        self._domains: dict[str, _Domain] = {}

    def wait(self, uid: str, *, urgent: bool = False) -> float:
        """Seconds until ``uid`` may be written again (0: now). Pure.

        ``urgent`` writes only wait for the base window, however wide the domain's window is.
        """
        state = self._domains.get(uid)
        if state is None or self.window <= 0:
            return 0.0
        window = self.window if urgent else state.window
        return max(0.0, state.last + window - self._now())

    def deferred(self, uid: str) -> None:
        """Record that a write of ``uid`` had to wait: its next write widens the window."""
        state = self._domains.get(uid)
        if state is not None:
            state.deferred = True

    def wrote(self, uid: str) -> None:
        """Record a status write of ``uid`` now, and set the window its next write must wait."""
        state = self._domains.get(uid)
        now = self._now()
        if state is None:
            self._domains[uid] = _Domain(last=now, window=self.window)
            return
        if state.deferred or now - state.last < self.max_window:
            state.window = min(max(state.window, self.window) * 2, self.max_window)
        else:
            state.window = self.window
        state.last = now
        state.deferred = False

    def current_window(self, uid: str) -> float:
        """The window ``uid``'s next non-urgent write waits for (the base for unknown uids)."""
        state = self._domains.get(uid)
        return self.window if state is None else state.window

    def forget(self, uid: str) -> None:
        """Drop ``uid`` (its domain is gone). Idempotent."""
        self._domains.pop(uid, None)

    def __len__(self) -> int:
        return len(self._domains)
