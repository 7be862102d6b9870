"""How many faults of each kind were injected, and where: the numbers a report quotes.

Every injector (:class:`computedomain_sim.faults.apiserver.ApiFaults`, the
:class:`computedomain_sim.faults.schedule.FaultScheduler`) records each fault it actually
injected here, by kind (``409``, ``latency``, ``watch-drop``, ``kill``, ``full-disk``...) and
by target (``update nodes``, ``plugin/node-1``...). Single event loop: no locking.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


class FaultCounts:
    """Counters by kind and by (kind, target)."""

    def __init__(self) -> None:
        self._by_kind: Counter[str] = Counter()
        self._by_target: Counter[tuple[str, str]] = Counter()
        self.requests = 0  # requests seen while enabled (the denominator of the rates)

    def record(self, kind: str, target: str = "") -> None:
        self._by_kind[kind] += 1
        if target:
            self._by_target[(kind, target)] += 1

    def __getitem__(self, kind: str) -> int:
        return self._by_kind[kind]

    def total(self) -> int:
        return sum(self._by_kind.values())

    def by_kind(self) -> dict[str, int]:
        return dict(sorted(self._by_kind.items()))

    def by_target(self) -> dict[str, dict[str, int]]:
        """``{kind: {target: count}}``, sorted."""
        out: dict[str, dict[str, int]] = {}
        for (kind, target), count in sorted(self._by_target.items()):
            out.setdefault(kind, {})[target] = count
        return out

    def snapshot(self) -> dict[str, Any]:
        """A JSON-ready copy: ``requests``, ``injected`` (by kind) and ``by_target``."""
        return {
            "requests": self.requests,
            "injected": self.by_kind(),
            "by_target": self.by_target(),
        }

    def reset(self) -> None:
        self._by_kind.clear()
        self._by_target.clear()
        self.requests = 0
