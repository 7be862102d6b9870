"""Standard ``metav1.Condition`` bookkeeping for ``ComputeDomain.status.conditions``.

The ``Ready`` condition is additive to upstream's API: it lets users run
``kubectl wait --for=condition=Ready computedomain/x`` and read why a domain is not ready.
Pure functions; the caller supplies the time.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

import attrs

from computedomain.api.models import Condition, ConditionStatus

READY: Final = "Ready"


def timestamp(now: datetime) -> str:
    """RFC 3339 with second precision, as Kubernetes writes ``metav1.Time``."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(
    conditions: Sequence[Condition],
    *,
    type: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: datetime,
    observed_generation: int | None = None,
) -> tuple[Condition, ...]:
    """Return ``conditions`` with ``type`` set. Pure.

    ``lastTransitionTime`` moves only when the status changes, as the API conventions require;
    the order of the other conditions is kept and a new type is appended.
    """
    result: list[Condition] = []
    found = False
    for cond in conditions:
        if cond.type != type:
            result.append(cond)
            continue
        found = True
        transition = cond.last_transition_time if cond.status == status else timestamp(now)
        result.append(
            attrs.evolve(
                cond,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=transition,
                observed_generation=observed_generation,
            )
        )
    if not found:
        result.append(
            Condition(
                type=type,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=timestamp(now),
                observed_generation=observed_generation,
            )
        )
    return tuple(result)


def find(conditions: Sequence[Condition], type: str) -> Condition | None:
    """The condition of ``type``, or None."""
    return next((c for c in conditions if c.type == type), None)


def same_except_time(a: Sequence[Condition], b: Sequence[Condition]) -> bool:
    """True when the two lists differ at most in transition times (no write needed)."""

    def key(conds: Sequence[Condition]) -> list[tuple[object, ...]]:
        return [(c.type, c.status, c.reason, c.message, c.observed_generation) for c in conds]

    return key(a) == key(b)
