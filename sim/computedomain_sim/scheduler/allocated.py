"""The devices the scheduler's cached claims hold, kept current from change notices.

Every scheduling decision needs the devices all other claims hold. Deriving them from every
cached claim per decision would make scheduling quadratic in the claims, and even with each
claim's devices remembered per resourceVersion the walk itself (listing the mutation cache, a key
and a version per claim) shows at scale (``bench/scale.py``). So :class:`AllocatedDevices` is
told which claims changed, and derives the devices of those claims only, the next time it is
asked:

- it is a handler of the claims informer, registered after the mutation cache, so that a
  changed claim is read back as the cache now answers for it;
- the scheduler records its own writes through :meth:`AllocatedDevices.mutation`, which feeds
  the mutation cache and notes the claim;
- a device stays taken while any claim holds it (a count per device), so excluding a pod's
  own claims frees only what no other claim holds;
- every ``recount_every`` seconds all claims are derived again: a mutation-cache entry that
  expires (an informer that never caught up with a write, for an hour) changes what the cache
  answers without any notice, and a recount bounds how long that can go unseen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from typing import Any, Final

from computedomain.kube.mutationcache import MutationCache
from computedomain.kube.store import object_key
from computedomain.runtime.clock import REAL_CLOCK, Clock

from . import allocation

Obj = dict[str, Any]
RECOUNT_EVERY: Final = 60.0

__all__ = ["AllocatedDevices"]


class AllocatedDevices:
    """Devices held per claim key, and how many claims hold each device. Single event loop."""

    def __init__(
        self,
        cache: MutationCache,
        *,
        clock: Clock | None = None,
        recount_every: float = RECOUNT_EVERY,
    ) -> None:
        self.cache = cache
        self._clock = clock or REAL_CLOCK
        self._recount_every = recount_every
        self._recounted_at: float | None = None
        self._held: dict[str, frozenset[allocation.DeviceId]] = {}
        self._holders: Counter[allocation.DeviceId] = Counter()
        self._changed: set[str] = set()

    # -- change notices ----------------------------------------------------------------------

    def mutation(self, obj: Obj) -> None:
        """Record the scheduler's own write in the mutation cache, and note the claim."""
        self.cache.mutation(obj)
        self._changed.add(object_key(obj))

    def on_add(self, obj: Obj) -> None:
        self._changed.add(object_key(obj))

    def on_update(self, old: Obj, new: Obj) -> None:
        self._changed.add(object_key(new))

    def on_delete(self, obj: Obj) -> None:
        self._changed.add(object_key(obj))

    # -- queries -----------------------------------------------------------------------------

    def taken(self, *, exclude: Collection[str]) -> frozenset[allocation.DeviceId]:
        """The devices held by any cached claim other than those keyed in ``exclude``."""
        self._catch_up()
        found = set(self._holders)
        excluded = Counter(d for key in exclude for d in self._held.get(key, ()))
        for device, claims in excluded.items():
            if self._holders[device] <= claims:
                found.discard(device)
        return frozenset(found)

    def _catch_up(self) -> None:
        now = self._clock.monotonic()
        if self._recounted_at is None or now - self._recounted_at >= self._recount_every:
            self._recounted_at = now
            self._changed.update(self._held)
            self._changed.update(object_key(c) for c in self.cache.list())
        for key in self._changed:
            for device in self._held.pop(key, ()):
                self._holders[device] -= 1
                if not self._holders[device]:
                    del self._holders[device]
            claim = self.cache.get(key)
            devices = allocation.allocated_devices([claim]) if claim is not None else frozenset()
            if devices:
                self._held[key] = devices
                self._holders.update(devices)
        self._changed.clear()
