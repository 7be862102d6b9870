"""At most one status write per domain per window (default 250 ms).

Daemon pods and clique entries of a domain change in bursts (a rack of daemons starting
together); each change triggers a reconcile, and each reconcile may want to write the domain's
status. :class:`Coalescer` remembers when each domain's status was last written; a reconcile
that wants to write sooner defers the write and re-queues its key for the end of the window,
where the latest state is written once. The first write of a domain is never delayed.

Used by :mod:`computedomain.controller.reconciling`; time comes from an injected monotonic
clock function (a clock's ``monotonic`` in tests).
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Coalescer:
    """Per-domain bookkeeping of the last status write. Single event loop."""

    def __init__(self, window: float, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self._now = monotonic
        self._last: dict[str, float] = {}

    def wait(self, uid: str) -> float:
        """Seconds until ``uid`` may be written again (0: now)."""
        last = self._last.get(uid)
        if last is None or self.window <= 0:
            return 0.0
        return max(0.0, last + self.window - self._now())

    def wrote(self, uid: str) -> None:
        """Record a status write of ``uid`` now."""
        self._last[uid] = self._now()

    def forget(self, uid: str) -> None:
        """Drop ``uid`` (its domain is gone). Idempotent."""
        self._last.pop(uid, None)

    def __len__(self) -> int:
        return len(self._last)
