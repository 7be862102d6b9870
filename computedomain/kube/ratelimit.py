"""Rate limiters: a token bucket and per-item exponential backoff, as client-go defines them.

Used by :mod:`computedomain.kube.rest` (client-side QPS/burst on every request) and by
:mod:`computedomain.kube.workqueue` (how long a failed key waits before its retry: a
:class:`~computedomain.runtime.backoff.Backoff` counted per key). Both read time only through
an injected :class:`~computedomain.runtime.clock.Clock`, so tests run on virtual time.
Not thread-safe: use from one event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from computedomain.runtime.backoff import Backoff
from computedomain.runtime.clock import REAL_CLOCK, Clock

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)


class TokenBucket:
    """Tokens refill at ``qps`` per second up to ``burst``; each request takes one.

    Reservations may take tokens into debt (like ``golang.org/x/time/rate``), so callers are
    served in the order they asked and :meth:`reserve` can tell a caller how long to wait without
    blocking. ``qps <= 0`` means unlimited. The bucket starts full.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if burst < 1 and qps > 0:
            msg = f"burst must be at least 1 when qps > 0 (got burst={burst})"
            raise ValueError(msg)
        self.qps = qps
        self.burst = burst
        self._clock = clock or REAL_CLOCK
        self._tokens = float(burst)
        self._last = self._clock.monotonic()

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def _refill(self) -> None:
        now = self._clock.monotonic()
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)

    def reserve(self) -> float:
        """Take one token now and return how many seconds the caller must wait to use it."""
        if self.unlimited:
            return 0.0
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def try_acquire(self) -> bool:
        """Take a token only if one is available right now."""
        if self.unlimited:
            return True
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def cancel_reservation(self) -> None:
        """Give back a token taken by :meth:`reserve` that will not be used."""
        if not self.unlimited:
            self._tokens = min(float(self.burst), self._tokens + 1.0)

    async def acquire(self) -> None:
        """Wait until this caller may proceed. Cancelling the wait returns the token."""
        delay = self.reserve()
        if delay <= 0:
            return
        try:
            await self._clock.sleep(delay)
        except asyncio.CancelledError:
            self.cancel_reservation()
            raise


class ItemRateLimiter(Protocol[K_contra]):
    """How long an item must wait before its next retry (the work queue's limiter)."""

    def when(self, item: K_contra) -> float: ...
    def forget(self, item: K_contra) -> None: ...
    def num_requeues(self, item: K_contra) -> int: ...


class ItemExponentialBackoff(Generic[K]):
    """``base_delay * 2**failures`` per item, capped at ``max_delay``; reset by :meth:`forget`."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.backoff = Backoff(base=base_delay, cap=max_delay)
        self._failures: dict[K, int] = {}

    def when(self, item: K) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        return self.backoff.delay(failures)

    def forget(self, item: K) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: K) -> int:
        return self._failures.get(item, 0)


class BucketLimiter(Generic[K]):
    """An overall token bucket shared by all items: bounds the retry rate of the whole queue."""

    def __init__(self, bucket: TokenBucket) -> None:
        self.bucket = bucket

    def when(self, item: K) -> float:
        return self.bucket.reserve()

    def forget(self, item: K) -> None:
        return None

    def num_requeues(self, item: K) -> int:
        return 0


class MaxOf(Generic[K]):
    """The longest wait any of the limiters asks for (client-go's default controller limiter)."""

    def __init__(self, *limiters: ItemRateLimiter[K]) -> None:
        self.limiters = limiters

    def when(self, item: K) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: K) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: K) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_limiter(
    *,
    base_delay: float = 0.005,
    max_delay: float = 1000.0,
    qps: float = 10.0,
    burst: int = 100,
    clock: Clock | None = None,
) -> MaxOf[K]:
    """Per-item exponential backoff combined with an overall token bucket (client-go defaults)."""
    return MaxOf(
        ItemExponentialBackoff(base_delay, max_delay),
        BucketLimiter(TokenBucket(qps, burst, clock=clock)),
    )
