"""Telling users why a workload waits: Warning events on the pods of a waiting claim.

While a claim waits — for this node's IMEX daemon of its domain, for another domain's label to
leave the node, or for anything else that is retried (a device an old claim still holds, the
node lock) — the driver hands the reason here, and it becomes a Warning event on every pod in
the claim's ``status.reservedFor`` (the pods the kubelet is starting), where
``kubectl describe pod`` shows it.

How often: the first report of a wait is posted at once, then at most one per claim every
``REPEAT_AFTER`` seconds, carrying the message current at that time. A forming domain moves a
waiting claim through several states in a few seconds (no daemon pod yet, pending, running,
registered, ready); an Event for each would make four or more per waiting pod, the driver's
largest source of requests at scale, while the user needs only the latest state, which the next
attempt after the window posts. A wait that turns into another kind of problem (event reason
``PrepareRetrying``: a device still held, a lock, a file) is posted at once. The EventRecorder
folds repeats of one message into one Event and cuts floods. Also the Warning on the Node when
a corrupt checkpoint was moved aside.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from computedomain.kube.events import WARNING, EventRecorder

REASON_WAITING: Final = "ComputeDomainNotReady"
REASON_RETRYING: Final = "PrepareRetrying"
REASON_CORRUPT_CHECKPOINT: Final = "CheckpointCorrupt"
REPEAT_AFTER: Final = 10.0
_FORGET_AFTER: Final = 600.0


def pod_refs(claim: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Pod objects (as event targets) from the claim's reservedFor. Pure."""
    namespace = (claim.get("metadata") or {}).get("namespace", "")
    out = []
    for consumer in (claim.get("status") or {}).get("reservedFor") or []:
        if consumer.get("resource") != "pods" or consumer.get("apiGroup"):
            continue
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": consumer.get("name"),
                    "namespace": namespace,
                    "uid": consumer.get("uid"),
                },
            }
        )
    return out


class WaitEvents:
    """Rate-limited wait reasons per claim (module docstring)."""

    def __init__(
        self, recorder: EventRecorder, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.recorder = recorder
        self._clock = clock
        self._last: dict[str, tuple[str, float]] = {}  # claim UID -> (event reason, when)
        self._pruned = clock()

    def report(self, claim: Mapping[str, Any], reason: str, waiting: bool = True) -> None:
        """Post ``reason`` on the claim's pods, unless the claim had an event of the same
        kind within ``REPEAT_AFTER`` seconds. Never raises.

        ``waiting``: a normal wait (event reason ComputeDomainNotReady), else another
        retryable problem (PrepareRetrying).
        """
        uid = str((claim.get("metadata") or {}).get("uid", ""))
        kind = REASON_WAITING if waiting else REASON_RETRYING
        now = self._clock()
        last = self._last.get(uid)
        if last is not None and last[0] == kind and now - last[1] < REPEAT_AFTER:
            return
        if now - self._pruned >= _FORGET_AFTER:
            self._last = {k: v for k, v in self._last.items() if now - v[1] < _FORGET_AFTER}
            self._pruned = now
        self._last[uid] = (kind, now)
        for pod in pod_refs(claim):
            self.recorder.event(pod, WARNING, kind, reason)


def corrupt_checkpoint_reporter(
    recorder: EventRecorder, node: Mapping[str, Any]
) -> Callable[[Path, str], None]:
    """The checkpoint store's ``on_corrupt`` callback: a Warning on this Node."""

    def report(moved_to: Path, why: str) -> None:
        recorder.event(
            dict(node),
            WARNING,
            REASON_CORRUPT_CHECKPOINT,
            f"corrupt checkpoint moved aside to {moved_to} ({why}); starting clean",
        )

    return report
