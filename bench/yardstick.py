"""A CPU yardstick for the benchmarks' JSON: how fast this machine was when a figure was taken.

The speed of this machine varies over a session: the same code took up to about twice the CPU
for the same work at some hours as at others (the plugin's CPU per prepared claim went from 3.3
to 7.3 ms), and neither the load average nor a bare interpreter start showed it reliably. A
figure from one run can only be compared with one from another taken at the same speed, so
``bench/prepare.py``, ``bench/e2e.py`` and ``bench/scale.py`` report :func:`cpu_ms` beside their
figures: the CPU time of a fixed pure-Python loop, the best of three, on the calling thread
(a benchmark's own server threads do not count).
"""

from __future__ import annotations

import time

LOOP = 1_000_000


def cpu_ms(repeats: int = 3) -> float:
    """The smallest CPU time, in ms, of ``repeats`` runs of the fixed loop (lower: faster)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        total = 0
        for i in range(LOOP):
            total += i * i
        best = min(best, time.thread_time() - start)
    return round(best * 1000, 1)
