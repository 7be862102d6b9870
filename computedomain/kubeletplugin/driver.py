"""The DRA driver adapter: a kubelet batch in, one result per claim out.

The kubelet's rules it answers to: docs/compatibility.md#timeouts-and-retries.

The gRPC servicers (:mod:`computedomain.kubeletplugin.grpcservers`) call :meth:`Driver.prepare`
and :meth:`Driver.unprepare`. Claims of one request are handled concurrently and each gets its
own result: a bad claim never fails the batch. Per claim:

- prepare reads the ResourceClaim from the API and checks it as the kubelet helper does (it
  exists, has the requested UID, is allocated) — each failure is this claim's error;
- then attempts run, each holding the node lock (:class:`~.nodelock.NodeLock`) only for the
  attempt; a PermanentError ends the claim with its message, a TemporaryError is retried with
  backoff (immediately, then 0.25 s doubling to 3 s) or sooner when a wake-up arrives, within a
  budget of 45 s or the caller's gRPC deadline less a margin, whichever ends first;
- a claim still failing when the budget runs out gets its last error with a note that the
  kubelet will retry (upstream leaves it out of the map; an error says why);
- while a claim waits (a :class:`~.ports.Waiting`: its domain's daemon, another domain's
  label) or is retried for any other reason (a device still held by an old claim, the lock),
  the reason is posted as a Warning event on the pods that reserve the claim, through
  ``report_wait`` (rate limited there).

Every message names the claim: ``error preparing devices for claim '<ns>/<name>:<uid>': ...``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from computedomain.api.errors import PermanentError, TemporaryError
from computedomain.kubeletplugin import metrics as m
from computedomain.kubeletplugin.nodelock import LockTimeout, NodeLock
from computedomain.kubeletplugin.ports import Waiting
from computedomain.kubeletplugin.state import DeviceState
from computedomain.kubeletplugin.wakeups import Wakeups
from computedomain.proto import dra
from computedomain.runtime import logs
from computedomain.runtime.backoff import Backoff
from computedomain.runtime.cancellation import raise_if_cancelling

log = logs.get_logger(__name__)
T = TypeVar("T")

BUDGET: Final = 45.0
DEADLINE_MARGIN: Final = 1.0  # answer before the kubelet's own deadline
RETRY_BACKOFF: Final = Backoff(base=0.25, cap=3.0)

# Reads a claim; raises PermanentError (e.g. not found) or TemporaryError (API trouble).
ClaimFetcher = Callable[[dra.ClaimRef], Awaitable[Mapping[str, Any]]]
# (claim object, message, is_wait) -> None: tell the claim's pods why it waits (is_wait: a
# normal wait for the domain or the node, else another retryable problem).
WaitReporter = Callable[[Mapping[str, Any], str, bool], None]


def ref_label(ref: dra.ClaimRef) -> str:
    return f"{ref.namespace}/{ref.name}:{ref.uid}"


def check_claim(ref: dra.ClaimRef, claim: Mapping[str, Any]) -> None:
    """The helper's checks on a fetched claim. Pure; raises PermanentError."""
    uid = (claim.get("metadata") or {}).get("uid")
    if uid != ref.uid:
        raise PermanentError(f"ResourceClaim got replaced: it has UID {uid}, not {ref.uid}")
    if not (claim.get("status") or {}).get("allocation"):
        raise PermanentError("no allocation set in ResourceClaim (status.allocation)")


class Driver:
    """Runs prepare/unprepare requests against the state machine."""

    def __init__(
        self,
        state: DeviceState,
        lock: NodeLock,
        *,
        fetch_claim: ClaimFetcher,
        metrics: m.Metrics,
        report_wait: WaitReporter | None = None,
        wakeups: Wakeups | None = None,
        wall_clock: Callable[[], float] = time.time,
        budget: float = BUDGET,
    ) -> None:
        self.state = state
        self.lock = lock
        self._fetch = fetch_claim
        self._metrics = metrics
        self._report_wait = report_wait
        self._wakeups = wakeups or Wakeups()
        self._wall = wall_clock
        self.budget = budget
        self._preparing: dict[str, int] = {}  # claim UID -> prepare requests in flight

    def _deadline(self, time_remaining: float | None) -> float:
        budget = self.budget
        if time_remaining is not None:
            budget = min(budget, time_remaining - DEADLINE_MARGIN)
        return asyncio.get_running_loop().time() + max(0.0, budget)

    async def prepare(
        self, claims: Sequence[dra.ClaimRef], *, time_remaining: float | None = None
    ) -> dict[str, dra.PrepareResult]:
        """One result per claim UID. Never raises for a claim's failure."""
        if not claims:
            return {}
        deadline = self._deadline(time_remaining)
        requested_at = self._wall()
        results = await asyncio.gather(
            *(self._prepare_one(ref, deadline, requested_at) for ref in claims)
        )
        return {ref.uid: result for ref, result in zip(claims, results, strict=True)}

    async def unprepare(
        self, claims: Sequence[dra.ClaimRef], *, time_remaining: float | None = None
    ) -> dict[str, str]:
        """Claim UID -> error ("" on success), one per claim."""
        if not claims:
            return {}
        deadline = self._deadline(time_remaining)
        errors = await asyncio.gather(*(self._unprepare_one(ref, deadline) for ref in claims))
        return {ref.uid: error for ref, error in zip(claims, errors, strict=True)}

    async def _prepare_one(
        self, ref: dra.ClaimRef, deadline: float, requested_at: float
    ) -> dra.PrepareResult:
        self._preparing[ref.uid] = self._preparing.get(ref.uid, 0) + 1
        try:
            return await self._prepare_claim(ref, deadline, requested_at)
        finally:
            self._preparing[ref.uid] -= 1
            if not self._preparing[ref.uid]:
                del self._preparing[ref.uid]

    async def _prepare_claim(
        self, ref: dra.ClaimRef, deadline: float, requested_at: float
    ) -> dra.PrepareResult:
        prefix = f"error preparing devices for claim '{ref_label(ref)}'"
        try:
            claim = await self._fetch(ref)
            check_claim(ref, claim)
        except (PermanentError, TemporaryError) as exc:
            return dra.PrepareResult(error=f"{prefix}: {exc}")
        except Exception as exc:  # a malformed object must fail this claim only
            log.exception("unexpected error reading a claim", claim=ref_label(ref))
            return dra.PrepareResult(error=f"{prefix}: unexpected error: {exc}")

        async def attempt() -> dra.PrepareResult:
            devices = await self.state.prepare(claim, requested_at=requested_at)
            return dra.PrepareResult(devices=devices)

        def on_wait(error: TemporaryError) -> None:
            if self._report_wait is None:
                return
            if isinstance(error, Waiting):
                self._report_wait(claim, error.reason, True)
            else:
                self._report_wait(claim, f"Retrying claim {ref_label(ref)}: {error}", False)

        outcome = await self._retry(m.PREPARE, attempt, deadline, on_wait)
        if isinstance(outcome, Exception):
            return dra.PrepareResult(error=f"{prefix}: {self._describe(outcome)}")
        return outcome

    async def _unprepare_one(self, ref: dra.ClaimRef, deadline: float) -> str:
        async def attempt() -> str:
            await self.state.unprepare(ref, prepare_in_flight=ref.uid in self._preparing)
            return ""

        outcome = await self._retry(m.UNPREPARE, attempt, deadline, None)
        if isinstance(outcome, Exception):
            detail = self._describe(outcome)
            return f"error unpreparing devices for claim '{ref_label(ref)}': {detail}"
        return outcome

    def _describe(self, error: Exception) -> str:
        if isinstance(error, TemporaryError):
            return f"{error} (still failing when the request's time ran out; the kubelet retries)"
        return str(error)

    async def _retry(
        self,
        operation: str,
        attempt: Callable[[], Awaitable[T]],
        deadline: float,
        on_wait: Callable[[TemporaryError], None] | None,
    ) -> T | Exception:
        loop = asyncio.get_running_loop()
        errors_type = m.PREPARE_DEVICES if operation == m.PREPARE else m.UNPREPARE_DEVICES
        retries = 0
        while True:
            started = loop.time()
            wake_on: tuple[str, ...] = ()
            delay = RETRY_BACKOFF.delay(retries)  # unless the error names its own
            try:
                async with self.lock.held():
                    with self._metrics.attempt(operation).track_inprogress():
                        result = await attempt()
                self._metrics.succeeded(operation, loop.time() - started)
                return result
            except LockTimeout as exc:
                self._metrics.failed(operation, m.LOCK_ACQUIRE)
                last: Exception = exc
                if on_wait is not None:
                    on_wait(exc)
            except PermanentError as exc:
                self._metrics.failed(operation, errors_type)
                return exc
            except TemporaryError as exc:
                self._metrics.failed(operation, errors_type)
                last = exc
                if isinstance(exc, Waiting):
                    wake_on = exc.wake_on
                elif exc.delay is not None:
                    delay = exc.delay
                if on_wait is not None:
                    on_wait(exc)
            except Exception as exc:  # a bug must not take the batch down: retry, then report
                raise_if_cancelling()
                log.exception("unexpected error in an attempt", operation=operation)
                self._metrics.failed(operation, errors_type)
                last = exc
            remaining = deadline - loop.time()
            if remaining <= 0:
                return last
            await self._wakeups.wait(wake_on, min(delay, remaining))
            retries += 1
