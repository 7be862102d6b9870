"""Pods a controller created or deleted that its informer has not reported yet.

Called by the DaemonSet and Deployment controllers, which would otherwise create a second pod
(or count a deleted one) when they sync again before the watch catches up: the same job
client-go's ``ControllerExpectations`` does. Pure bookkeeping; the informer's handlers settle
entries as the events arrive, and entries expire after ``ttl`` seconds in case an event is
missed (a relist also settles them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from computedomain.kube.store import object_key
from computedomain.runtime.clock import REAL_CLOCK, Clock

__all__ = ["Expectations"]

Obj = Mapping[str, Any]


class Expectations:
    """Per owner UID: created pods not yet seen, deleted pod keys not yet gone."""

    def __init__(self, *, ttl: float = 30.0, clock: Clock | None = None) -> None:
        self._ttl = ttl
        self._clock = clock or REAL_CLOCK
        self._created: dict[str, tuple[float, dict[str, Any]]] = {}
        self._deleted: dict[str, float] = {}

    def created(self, pod: dict[str, Any]) -> None:
        self._created[object_key(pod)] = (self._clock.monotonic() + self._ttl, pod)

    def deleted(self, key: str) -> None:
        self._deleted[key] = self._clock.monotonic() + self._ttl

    def observed(self, pod: Obj, *, gone: bool = False) -> None:
        """An informer event for ``pod`` (``gone``: a delete event)."""
        key = object_key(pod)
        self._created.pop(key, None)
        if gone:
            self._deleted.pop(key, None)

    def adjust(self, pods: Sequence[Obj], owner_uid: str) -> list[Obj]:
        """``pods`` (from the cache) plus created-but-unseen pods of ``owner_uid``, minus pods
        whose deletion we asked for (they are treated as terminating)."""
        now = self._clock.monotonic()
        self._created = {k: v for k, v in self._created.items() if v[0] > now}
        self._deleted = {k: t for k, t in self._deleted.items() if t > now}
        seen = {object_key(p) for p in pods}
        out: list[Obj] = []
        for pod in pods:
            if object_key(pod) in self._deleted:
                meta = {**pod["metadata"], "deletionTimestamp": "pending"}
                out.append({**pod, "metadata": meta})
            else:
                out.append(pod)
        for key, (_, pod) in self._created.items():
            owners = pod["metadata"].get("ownerReferences") or []
            if key not in seen and any(o.get("uid") == owner_uid for o in owners):
                out.append(pod)
        return out
