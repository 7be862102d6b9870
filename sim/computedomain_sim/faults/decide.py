"""What a fault spec does to one request: a pure, seeded decision.

Called by :class:`computedomain_sim.faults.apiserver.ApiFaults` once per API request, with the
request's facts and how many times the same ``verb path`` was seen before. The randomness of a
decision comes from a :class:`random.Random` seeded with ``(seed, rule, verb path, occurrence)``
only, never from the order in which unrelated requests arrive: the n-th update of
``nodes/node-1`` meets the same fate in every run with the same seed, however the other
requests interleave. A run is therefore reproducible from its seed to the extent that each
component issues the same requests per object (which is what one wants to replay).

Per matching rule, in order, the same draws are made whatever the outcome (so adding a fault
kind to a rule does not shift the others): one uniform number for the error bands (409 only on
update/patch, 504 only on writes; the rates of the kinds that apply are consecutive bands),
one for whether to delay and one for how long, one for the watch fault and one for its moment.
The first rule that yields an error decides it; delays of all matching rules add up; the first
rule that yields a watch fault decides it.
"""

from __future__ import annotations

import random
from typing import Final

import attrs

from computedomain_sim.faults.spec import CAS_VERBS, WRITE_VERBS, FaultSpec, Rule

DROP: Final = "watch-drop"
EXPIRE: Final = "watch-expire"
LATENCY: Final = "latency"


@attrs.frozen
class Request:
    """The facts of a request that rules are matched on."""

    verb: str
    resource: str  # plural, or plural/subresource; "" for non-resource requests
    namespace: str = ""
    user: str | None = None  # None: not known (no authentication, or no rule needs it)
    agent: str = ""
    path: str = ""

    @property
    def key(self) -> str:
        """What occurrences are counted by: the verb and the path."""
        return f"{self.verb} {self.path}"


@attrs.frozen
class Decision:
    """What to do with one request; the default does nothing."""

    error: str | None = None  # a kind of spec.ERRORS
    retry_after: float = 0.0
    latency: float = 0.0
    watch: str | None = None  # DROP or EXPIRE
    watch_after: float = 0.0

    @property
    def empty(self) -> bool:
        return self.error is None and not self.latency and self.watch is None


NOTHING: Final = Decision()


def applies(kind: str, verb: str) -> bool:
    """Whether an error kind can answer this verb. Pure."""
    if kind == "409":
        return verb in CAS_VERBS
    if kind == "504":
        return verb in WRITE_VERBS
    return True


def draws(seed: int, rule: int, request: Request, occurrence: int) -> random.Random:
    """The random source of one rule for one request. Pure (a fresh generator)."""
    return random.Random(f"{seed}|{rule}|{request.key}|{occurrence}")


def _error(rule: Rule, verb: str, u: float) -> str | None:
    edge = 0.0
    for kind, rate in rule.errors:
        if not applies(kind, verb):
            continue
        edge += rate
        if u < edge:
            return kind
    return None


def decide(spec: FaultSpec, request: Request, occurrence: int, seed: int) -> Decision:
    """The decision for ``request``, its ``occurrence``-th time (0-based). Pure."""
    error: str | None = None
    retry_after = 0.0
    latency = 0.0
    watch: str | None = None
    watch_after = 0.0
    for index, rule in enumerate(spec.rules):
        if not rule.scope.matches(
            verb=request.verb,
            resource=request.resource,
            namespace=request.namespace,
            user=request.user,
            agent=request.agent,
        ):
            continue
        rng = draws(seed, index, request, occurrence)
        u_error, u_delay, u_length, u_watch, u_moment = (rng.random() for _ in range(5))
        kind = _error(rule, request.verb, u_error)
        if error is None and kind is not None:
            error, retry_after = kind, rule.retry_after
        if rule.latency is not None and u_delay < rule.latency_rate:
            low, high = rule.latency
            latency += low + (high - low) * u_length
        if watch is None and request.verb == "watch":
            if u_watch < rule.watch_drop:
                watch = DROP
            elif u_watch < rule.watch_drop + rule.watch_expire:
                watch = EXPIRE
            if watch is not None:
                low, high = rule.watch_after
                watch_after = low + (high - low) * u_moment
    if error is None and not latency and watch is None:
        return NOTHING
    return Decision(error, retry_after, latency, watch, watch_after)
