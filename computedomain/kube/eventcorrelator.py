"""Decides, per recorded event, whether to create a new Event, bump an existing one, or drop it.

Used by :class:`~computedomain.kube.events.EventRecorder`; pure apart from reading its clock. As
client-go's correlator does for core/v1 Events:

- **de-duplication**: the same (involved object, type, reason, message, source) seen again within
  ``window`` seconds updates the Event already written — ``count`` + 1, new ``lastTimestamp`` —
  instead of creating another;
- **spam filter**: each (source, involved object) has a token bucket (``burst`` 25, refilled at
  ``qps`` one per 5 minutes); when it is empty, events about that object are dropped, so a
  flapping condition cannot flood the API server.

Both tables are bounded (least recently used entries are evicted past ``max_entries``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import attrs

from computedomain.kube.ratelimit import TokenBucket
from computedomain.runtime.clock import REAL_CLOCK, Clock


@attrs.frozen
class EventKey:
    """What makes two events "the same" for de-duplication."""

    involved: tuple[str, str, str, str, str]  # apiVersion, kind, namespace, name, uid
    type: str
    reason: str
    message: str
    source: tuple[str, str]  # component, host

    @property
    def spam_key(self) -> tuple[Any, ...]:
        return (self.source, self.involved)


@attrs.frozen
class Create:
    """Write a new Event (count 1)."""


@attrs.frozen
class Bump:
    """Patch the existing Event ``name`` in ``namespace`` to ``count`` (first seen at ``first``)."""

    name: str
    namespace: str
    count: int
    first_timestamp: str


@attrs.frozen
class Drop:
    """Do not write anything (rate limited)."""


Decision = Create | Bump | Drop


@attrs.define
class _Seen:
    name: str
    namespace: str
    count: int
    first_timestamp: str
    last_seen: float


class Correlator:
    """Remembers recent events; see the module docstring."""

    def __init__(
        self,
        *,
        window: float = 600.0,
        burst: int = 25,
        qps: float = 1.0 / 300.0,
        max_entries: int = 4096,
        clock: Clock | None = None,
    ) -> None:
        self.window = window
        self.burst = burst
        self.qps = qps
        self.max_entries = max_entries
        self._clock = clock or REAL_CLOCK
        self._seen: OrderedDict[EventKey, _Seen] = OrderedDict()
        self._buckets: OrderedDict[tuple[Any, ...], TokenBucket] = OrderedDict()

    def decide(self, key: EventKey) -> Decision:
        """What to do with an event now. Consumes a token from the object's bucket."""
        if not self._allow(key.spam_key):
            return Drop()
        seen = self._seen.get(key)
        if seen is None or self._clock.monotonic() - seen.last_seen > self.window:
            return Create()
        self._seen.move_to_end(key)
        return Bump(seen.name, seen.namespace, seen.count + 1, seen.first_timestamp)

    def written(self, key: EventKey, event: dict[str, Any]) -> None:
        """Remember the Event the server stored for ``key`` (after a create or a bump)."""
        meta = event.get("metadata") or {}
        self._seen[key] = _Seen(
            name=str(meta.get("name") or ""),
            namespace=str(meta.get("namespace") or ""),
            count=int(event.get("count") or 1),
            first_timestamp=str(event.get("firstTimestamp") or ""),
            last_seen=self._clock.monotonic(),
        )
        self._seen.move_to_end(key)
        while len(self._seen) > self.max_entries:
            self._seen.popitem(last=False)

    def forget(self, key: EventKey) -> None:
        """Forget the Event for ``key`` (it vanished on the server; the next one is created)."""
        self._seen.pop(key, None)

    def _allow(self, spam_key: tuple[Any, ...]) -> bool:
        bucket = self._buckets.get(spam_key)
        if bucket is None:
            bucket = TokenBucket(self.qps, self.burst, clock=self._clock)
            self._buckets[spam_key] = bucket
            while len(self._buckets) > self.max_entries:
                self._buckets.popitem(last=False)
        self._buckets.move_to_end(spam_key)
        return bucket.try_acquire()
