"""A rate-limited work queue of keys with client-go semantics, and the worker loop around it.

Informer handlers :meth:`~RateLimitingQueue.add` keys (``ns/name``); :func:`run_workers` takes
keys off the queue and calls the reconcile handler. The guarantees, as in client-go:

- a key is never handed to two workers at once: while it is being processed, re-adds only mark
  it dirty, and :meth:`~RateLimitingQueue.done` puts it back once (re-adds are coalesced);
- a key waiting in the queue is there once, however often it was added;
- :meth:`~RateLimitingQueue.add_rate_limited` waits ``max(per-item exponential backoff, overall
  token bucket)`` before re-adding; :meth:`~RateLimitingQueue.forget` resets the backoff;
- :meth:`~RateLimitingQueue.shutdown` stops accepting keys; getters drain what is queued and then
  get :class:`ShutDown`.

Time comes from an injected clock (delays run on virtual time in tests). Everything must be
called from the event loop's thread. Metrics go to a :class:`QueueMetrics` (see
:mod:`computedomain.kube.queuemetrics` for the Prometheus one).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, Protocol, TypeVar

from computedomain.api.errors import PermanentError, TemporaryError
from computedomain.kube.ratelimit import ItemRateLimiter, default_controller_limiter
from computedomain.runtime import logs
from computedomain.runtime.cancellation import raise_if_cancelling
from computedomain.runtime.clock import REAL_CLOCK, Clock

K = TypeVar("K", bound=Hashable)

_log = logs.get_logger(__name__)


class ShutDown(Exception):
    """The queue was shut down and has nothing left to hand out."""


class QueueMetrics(Protocol):
    """Hooks the queue calls; ``name`` is the queue's name. Implementations must not raise."""

    def depth(self, name: str, value: int) -> None: ...
    def added(self, name: str) -> None: ...
    def retried(self, name: str) -> None: ...
    def queue_latency(self, name: str, seconds: float) -> None: ...
    def work_duration(self, name: str, seconds: float) -> None: ...


class NoMetrics:
    """Discards every measurement."""

    def depth(self, name: str, value: int) -> None:
        return None

    def added(self, name: str) -> None:
        return None

    def retried(self, name: str) -> None:
        return None

    def queue_latency(self, name: str, seconds: float) -> None:
        return None

    def work_duration(self, name: str, seconds: float) -> None:
        return None


class RateLimitingQueue(Generic[K]):
    """Keys waiting to be processed; see the module docstring for the guarantees."""

    def __init__(
        self,
        *,
        base_delay: float = 0.005,
        max_delay: float = 1000.0,
        qps: float = 10.0,
        burst: int = 100,
        clock: Clock | None = None,
        name: str = "",
        metrics: QueueMetrics | None = None,
        limiter: ItemRateLimiter[K] | None = None,
    ) -> None:
        self.name = name
        self._clock = clock or REAL_CLOCK
        self._metrics: QueueMetrics = metrics or NoMetrics()
        self._limiter: ItemRateLimiter[K] = limiter or default_controller_limiter(
            base_delay=base_delay, max_delay=max_delay, qps=qps, burst=burst, clock=self._clock
        )
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._added_at: dict[K, float] = {}
        self._started_at: dict[K, float] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        # delayed adds: earliest ready time per key, and a heap with lazy invalidation
        self._ready_at: dict[K, float] = {}
        self._delayed: list[tuple[float, int, K]] = []
        self._seq = itertools.count()
        self._waiter: asyncio.Task[None] | None = None
        self._waiter_target: float | None = None

    # -- adding ------------------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Mark ``key`` as needing work. Idempotent while it waits; ignored after shutdown."""
        if self._shutting_down or key in self._dirty:
            return
        self._metrics.added(self.name)
        self._dirty.add(key)
        if key in self._processing:
            return  # done() re-queues it: one worker per key
        self._added_at.setdefault(key, self._clock.monotonic())
        self._queue.append(key)
        self._metrics.depth(self.name, len(self._queue))
        self._wake_one()

    def add_after(self, key: K, delay: float) -> None:
        """Add ``key`` once ``delay`` seconds have passed; an earlier pending time wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        ready = self._clock.monotonic() + delay
        current = self._ready_at.get(key)
        if current is not None and current <= ready:
            return
        self._ready_at[key] = ready
        heapq.heappush(self._delayed, (ready, next(self._seq), key))
        self._schedule_waiter(ready)

    def add_rate_limited(self, key: K) -> None:
        """Re-add ``key`` after the limiter's delay (backoff grows with each call until forget)."""
        self._metrics.retried(self.name)
        self.add_after(key, self._limiter.when(key))

    def forget(self, key: K) -> None:
        """Reset ``key``'s backoff (call after a success). Does not remove it from the queue."""
        self._limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        """How many rate-limited re-adds ``key`` has had since it was last forgotten."""
        return self._limiter.num_requeues(key)

    # -- taking ------------------------------------------------------------------------------

    async def get(self) -> K:
        """The next key to process; the caller must call :meth:`done` with it. Raises ShutDown."""
        loop = asyncio.get_running_loop()
        while True:
            if self._queue:
                key = self._queue.popleft()
                self._dirty.discard(key)
                self._processing.add(key)
                now = self._clock.monotonic()
                added = self._added_at.pop(key, now)
                self._metrics.queue_latency(self.name, now - added)
                self._metrics.depth(self.name, len(self._queue))
                self._started_at[key] = now
                return key
            if self._shutting_down:
                raise ShutDown(self.name or "work queue")
            getter: asyncio.Future[None] = loop.create_future()
            self._getters.append(getter)
            try:
                await getter
            except asyncio.CancelledError:
                if getter.done() and not getter.cancelled():
                    self._wake_one()  # we were woken for a key we will not take: pass it on
                raise
            finally:
                if getter in self._getters:
                    self._getters.remove(getter)

    def done(self, key: K) -> None:
        """``key``'s processing finished; re-queue it if it was added meanwhile."""
        if key not in self._processing:
            return
        self._processing.discard(key)
        started = self._started_at.pop(key, None)
        if started is not None:
            self._metrics.work_duration(self.name, self._clock.monotonic() - started)
        if key in self._dirty:
            self._added_at.setdefault(key, self._clock.monotonic())
            self._queue.append(key)
            self._metrics.depth(self.name, len(self._queue))
            self._wake_one()

    def shutdown(self, *, drop_pending: bool = False) -> None:
        """Stop accepting keys and end the delay timer; getters drain the queue, then ShutDown.

        With ``drop_pending`` queued keys are discarded so getters end at once.
        """
        self._shutting_down = True
        if drop_pending:
            self._queue.clear()
            self._dirty.clear()
            self._added_at.clear()
        self._delayed.clear()
        self._ready_at.clear()
        if self._waiter is not None:
            self._waiter.cancel()
            self._waiter = None
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        """Keys waiting to be handed out (not counting delayed or in-process ones)."""
        return len(self._queue)

    @property
    def processing(self) -> frozenset[K]:
        return frozenset(self._processing)

    @property
    def waiting_delayed(self) -> int:
        """Keys scheduled by add_after / add_rate_limited and not yet due."""
        return len(self._ready_at)

    # -- internals ---------------------------------------------------------------------------

    def _wake_one(self) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def _schedule_waiter(self, ready: float) -> None:
        """Make sure a timer task wakes up by ``ready``; restart it if it would sleep longer."""
        if self._waiter is not None and not self._waiter.done():
            if self._waiter_target is not None and self._waiter_target <= ready:
                return
            self._waiter.cancel()
        self._waiter_target = ready
        self._waiter = asyncio.get_running_loop().create_task(
            self._release_delayed(), name=f"workqueue-delay:{self.name}"
        )

    def _pop_due(self) -> float | None:
        """Add every due delayed key; return the next ready time, or None when none is pending."""
        now = self._clock.monotonic()
        while self._delayed:
            ready, _, key = self._delayed[0]
            if self._ready_at.get(key) != ready:
                heapq.heappop(self._delayed)  # superseded by an earlier add_after
                continue
            if ready > now:
                return ready
            heapq.heappop(self._delayed)
            del self._ready_at[key]
            self.add(key)
        return None

    async def _release_delayed(self) -> None:
        # Computing the delay and starting the sleep happen in one step, so a clock that moves
        # between them cannot make the timer oversleep.
        while not self._shutting_down:
            next_ready = self._pop_due()
            self._waiter_target = next_ready
            if next_ready is None:
                return
            await self._clock.sleep(next_ready - self._clock.monotonic())


Classifier = Callable[[Exception], "PermanentError | TemporaryError | None"]


async def run_workers(
    queue: RateLimitingQueue[K],
    handler: Callable[[K], Awaitable[None]],
    *,
    workers: int = 1,
    classify: Classifier | None = None,
    on_permanent: Callable[[K, PermanentError], None] | None = None,
) -> None:
    """Run ``workers`` tasks that take keys from ``queue`` and await ``handler(key)``.

    The outcome decides what happens to the key:

    - success: ``forget`` (backoff reset);
    - :class:`PermanentError`: ``forget``, logged at error once and passed to ``on_permanent``
      (e.g. to emit a Warning event); never retried;
    - :class:`TemporaryError` with ``delay``: ``add_after(delay)``; without: ``add_rate_limited``;
    - any other exception: ``classify(exc)`` may turn it into one of the two above; otherwise
      ``add_rate_limited`` and a warning with the attempt count.

    Returns when the queue is shut down and drained; cancelling it cancels the workers (each
    in-flight key is still marked done).
    """
    if workers < 1:
        msg = f"workers must be at least 1 (got {workers})"
        raise ValueError(msg)

    async def worker(index: int) -> None:
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            try:
                await handler(key)
            except Exception as exc:  # every failure is classified below
                raise_if_cancelling()
                _handle_failure(queue, key, exc, classify, on_permanent)
            else:
                queue.forget(key)
            finally:
                queue.done(key)

    tasks = [
        asyncio.create_task(worker(i), name=f"worker:{queue.name}:{i}") for i in range(workers)
    ]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _handle_failure(
    queue: RateLimitingQueue[K],
    key: K,
    exc: Exception,
    classify: Classifier | None,
    on_permanent: Callable[[K, PermanentError], None] | None,
) -> None:
    classified: Exception = exc
    if not isinstance(exc, PermanentError | TemporaryError) and classify is not None:
        classified = classify(exc) or exc
    if isinstance(classified, PermanentError):
        queue.forget(key)
        _log.error("giving up on key", queue=queue.name, key=key, error=str(classified))
        if on_permanent is not None:
            try:
                on_permanent(key, classified)
            except Exception:
                _log.exception("on_permanent hook failed", queue=queue.name, key=key)
        return
    if isinstance(classified, TemporaryError) and classified.delay is not None:
        _log.debug("retrying key later", queue=queue.name, key=key, delay=classified.delay)
        queue.add_after(key, classified.delay)
        return
    attempts = queue.num_requeues(key) + 1
    error = f"{type(exc).__name__}: {exc}"
    if isinstance(classified, TemporaryError):
        _log.info("not ready; will retry", queue=queue.name, key=key, attempt=attempts, error=error)
    else:
        _log.warning(
            "reconcile failed; will retry", queue=queue.name, key=key, attempt=attempts, error=error
        )
    queue.add_rate_limited(key)
