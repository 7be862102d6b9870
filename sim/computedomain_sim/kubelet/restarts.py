"""Whether a container that exited is started again, and after how long (CrashLoopBackOff).

Called by :mod:`.containers`. Pure.

``restartPolicy`` Always restarts every exit, OnFailure a non-zero exit, Never none. The delay
doubles from ``base`` up to ``cap`` with each restart, and starts over once a run lasted longer
than ``reset_after``. The kubelet uses 10 s / 300 s / 600 s; the simulation defaults to quicker
values so that failure scenarios finish in seconds (:class:`Backoff`).
"""

from __future__ import annotations

import attrs

__all__ = ["Backoff", "should_restart"]


def should_restart(policy: str, exit_code: int) -> bool:
    """Whether ``restartPolicy`` ``policy`` restarts a container that exited with ``exit_code``.
    Pure; an unknown policy behaves as Always (the API server defaults it)."""
    if policy == "Never":
        return False
    if policy == "OnFailure":
        return exit_code != 0
    return True


@attrs.frozen
class Backoff:
    """Restart delays of one container."""

    base: float = 10.0
    cap: float = 300.0
    reset_after: float = 600.0

    def delay(self, restarts_in_a_row: int) -> float:
        """Seconds to wait before restart number ``restarts_in_a_row`` (1 = the first). Pure."""
        if restarts_in_a_row <= 0:
            return 0.0
        return float(min(self.base * 2 ** (restarts_in_a_row - 1), self.cap))

    def next_streak(self, streak: int, ran_for: float) -> int:
        """The restart streak after a run of ``ran_for`` seconds ended. Pure."""
        return 1 if ran_for >= self.reset_after else streak + 1
