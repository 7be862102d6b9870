"""Domain errors that decide what a work-queue worker does with a failed reconcile.

Minimal placeholder written by the kube layer's author so that ``computedomain.kube.workqueue``
can classify failures; the api layer's owner replaces it with the full module (same names).

- :class:`PermanentError`: bad input or a state retries cannot fix. Reported once, never retried.
- :class:`TemporaryError`: wait and try again, after ``delay`` seconds when given, otherwise
  with the queue's per-item backoff.
"""

from __future__ import annotations


class PermanentError(Exception):
    """Retrying cannot help (invalid spec, conflicting ownership): report and drop."""


class TemporaryError(Exception):
    """Retry later; ``delay`` (seconds) overrides the queue's backoff when not None."""

    def __init__(self, message: str = "", *, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay
