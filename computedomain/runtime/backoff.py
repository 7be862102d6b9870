"""Exponential backoff as one value: how long to wait before the n-th retry.

Every retry loop of the programs (the work queue's per-key limiter, the informer's list/watch
restarts, the daemon's membership writes, the kubelet plugin's claim attempts) describes its
delays with a :class:`Backoff` and counts its own failures; the value holds no state, so one
constant serves every caller and every key. Jitter, when asked for, multiplies the capped delay
by a factor drawn from ``jitter`` (as client-go's ``wait.Backoff`` does), so that many clients
that failed together do not retry together.
"""

from __future__ import annotations

import random

import attrs


def _check_jitter(
    instance: Backoff, attribute: attrs.Attribute[tuple[float, float]], value: tuple[float, float]
) -> None:
    low, high = value
    if not 0.0 <= low <= high:
        msg = f"jitter must be a range (low, high) with 0 <= low <= high (got {value!r})"
        raise ValueError(msg)


@attrs.frozen
class Backoff:
    """``base * factor**retry``, at most ``cap``, times a factor drawn from ``jitter``."""

    base: float = attrs.field(validator=attrs.validators.ge(0.0))
    cap: float = attrs.field(validator=attrs.validators.ge(0.0))
    factor: float = attrs.field(default=2.0, validator=attrs.validators.ge(1.0))
    jitter: tuple[float, float] = attrs.field(default=(1.0, 1.0), validator=_check_jitter)

    def delay(self, retry: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first). Pure given ``rng``.

        Without ``rng`` a jittered delay draws from the ``random`` module.
        """
        # Past this exponent the cap has long been reached; stopping there avoids float overflow.
        exponent = min(max(retry, 0), 1000)
        try:
            raw = self.base * self.factor**exponent
        except OverflowError:
            raw = self.cap
        capped = min(raw, self.cap)
        low, high = self.jitter
        if low == high == 1.0:
            return capped
        return capped * (rng or random).uniform(low, high)
