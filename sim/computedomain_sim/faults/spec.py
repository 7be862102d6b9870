"""The fault specification: a compact text form, validated into frozen rules (pure).

``computedomain sim apiserver --faults SPEC``, ``PUT /debug/faults`` and tests all describe the
API-server faults with the same text, parsed here::

    409=0.05,429=0.02,latency=5ms..50ms,watch-drop=0.01,seed=42
    seed=7;409=0.2,verbs=update|patch,resources=nodes;500=0.01,users=system:serviceaccount:*

A spec is rules separated by ``;``; a rule is ``key=value`` items separated by ``,``; list
values are separated by ``|``. Keys (numbers are probabilities per request, ``0..1`` or
``N%``):

==================  =======================================================================
``409``             Conflict, only on ``update``/``patch`` (the verbs that compare and swap)
``429``             TooManyRequests with ``Retry-After`` (every verb, watches included)
``500``             InternalError, no ``Retry-After``
``503``             ServiceUnavailable with ``Retry-After``
``504``             the request IS processed, then answered with a 504 Timeout: the client
                    cannot know whether its write landed (writes only)
``latency``         a delay before the request is served: ``20ms`` or ``5ms..50ms`` (uniform)
``latency-rate``    the share of requests delayed (default 1 when ``latency`` is set)
``watch-drop``      per watch: the connection is closed mid-stream, ``watch-after`` later
``watch-expire``    per watch: ``watch-after`` later the resource's event window is cut to
                    now and every watch of it ends with an in-stream 410 ERROR event
``watch-after``     when a watch fault strikes: ``DUR`` or ``DUR..DUR`` (default 10ms..1s)
``retry-after``     the Retry-After of 429/503 (default ``1s``; fractions such as ``50ms``
                    are understood by our client, client-go reads whole seconds only)
``verbs``           scope: ``get|list|watch|create|update|patch|delete|deletecollection``,
                    or the groups ``reads``/``writes``
``resources``       scope: plurals, optionally with a subresource (``pods/status``)
``namespaces``      scope: namespaces (``""`` never matches cluster-scoped requests)
``users``           scope: user names, shell globs (``system:serviceaccount:nvidia-dra:*``)
``agents``          scope: User-Agent globs (``compute-domain-kubelet-plugin*``)
``seed``            the seed of every decision (once per spec; random and reported if absent)
==================  =======================================================================

The error rates of one rule are exclusive bands of one draw, so they may sum to at most 1.
:func:`parse` raises :class:`SpecError` naming the rule, the key and the reason;
:func:`render` gives the canonical text back (``parse(render(s)) == s``).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable
from typing import Final

import attrs

from computedomain.runtime import flags

ERRORS: Final = ("409", "429", "500", "503", "504")
ALIASES: Final = {
    "conflict": "409",
    "throttle": "429",
    "internal": "500",
    "unavailable": "503",
    "timeout": "504",
}
VERBS: Final = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
VERB_GROUPS: Final = {
    "reads": ("get", "list", "watch"),
    "writes": ("create", "update", "patch", "delete", "deletecollection"),
}
CAS_VERBS: Final = frozenset({"update", "patch"})
WRITE_VERBS: Final = frozenset(VERB_GROUPS["writes"])
DEFAULT_WATCH_AFTER: Final = (0.01, 1.0)
DEFAULT_RETRY_AFTER: Final = 1.0
MAX_DELAY: Final = 600.0


class SpecError(ValueError):
    """A fault spec that cannot be used; the message names the rule, key and reason."""


@attrs.frozen
class Scope:
    """Which requests a rule applies to; an empty tuple means "any"."""

    verbs: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()

    @property
    def needs_user(self) -> bool:
        return bool(self.users)

    def matches(
        self, *, verb: str, resource: str, namespace: str, user: str | None, agent: str
    ) -> bool:
        """Whether a request is in scope. Pure. ``resource`` is ``plural[/subresource]``."""
        if self.verbs and verb not in self.verbs:
            return False
        if self.resources and resource not in self.resources:
            return False
        if self.namespaces and namespace not in self.namespaces:
            return False
        if self.users and (user is None or not _globs(self.users, user)):
            return False
        return not (self.agents and not _globs(self.agents, agent))


def _globs(patterns: Iterable[str], value: str) -> bool:
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


@attrs.frozen
class Rule:
    """One rule: rates of each fault kind and the scope they apply in."""

    errors: tuple[tuple[str, float], ...] = ()  # (kind, rate), kinds from ERRORS, in order
    latency: tuple[float, float] | None = None  # (low, high) seconds
    latency_rate: float = 1.0
    watch_drop: float = 0.0
    watch_expire: float = 0.0
    watch_after: tuple[float, float] = DEFAULT_WATCH_AFTER
    retry_after: float = DEFAULT_RETRY_AFTER
    scope: Scope = Scope()

    def rate(self, kind: str) -> float:
        return dict(self.errors).get(kind, 0.0)

    @property
    def idle(self) -> bool:
        """True when the rule injects nothing."""
        return (
            not any(rate for _, rate in self.errors)
            and (self.latency is None or self.latency_rate == 0 or self.latency[1] == 0)
            and not self.watch_drop
            and not self.watch_expire
        )


@attrs.frozen
class FaultSpec:
    """Rules in order (the first rule that answers with an error wins) and the seed."""

    rules: tuple[Rule, ...] = ()
    seed: int | None = None

    @property
    def idle(self) -> bool:
        return all(rule.idle for rule in self.rules)

    def with_seed(self, seed: int) -> FaultSpec:
        return attrs.evolve(self, seed=seed)


def _probability(where: str, text: str) -> float:
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        msg = f"{where}: {text!r} is not a probability (a number from 0 to 1, or N%)"
        raise SpecError(msg) from None
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        msg = f"{where}: {text!r} is not between 0 and 1"
        raise SpecError(msg)
    return value


def _duration(where: str, text: str) -> float:
    try:
        value = flags.duration(text)
    except ValueError as exc:
        raise SpecError(f"{where}: {exc}") from None
    if not 0.0 <= value <= MAX_DELAY or math.isnan(value):
        msg = f"{where}: {text!r} is not between 0 and {MAX_DELAY:g}s"
        raise SpecError(msg)
    return value


def _range(where: str, text: str) -> tuple[float, float]:
    low_text, sep, high_text = text.partition("..")
    low = _duration(where, low_text)
    high = _duration(where, high_text) if sep else low
    if high < low:
        msg = f"{where}: {text!r} ends before it starts"
        raise SpecError(msg)
    return (low, high)


def _list(where: str, text: str) -> tuple[str, ...]:
    items = tuple(part.strip() for part in text.split("|"))
    if not text.strip() or any(not item for item in items):
        msg = f"{where}: {text!r} has an empty item (separate values with |)"
        raise SpecError(msg)
    return items


def _verbs(where: str, text: str) -> tuple[str, ...]:
    found: list[str] = []
    for item in _list(where, text):
        if item in VERB_GROUPS:
            found += VERB_GROUPS[item]
        elif item in VERBS:
            found.append(item)
        else:
            valid = ", ".join((*VERBS, *VERB_GROUPS))
            msg = f"{where}: unknown verb {item!r} (valid: {valid})"
            raise SpecError(msg)
    return tuple(dict.fromkeys(found))


def _resources(where: str, text: str) -> tuple[str, ...]:
    items = _list(where, text)
    for item in items:
        plural, _, sub = item.partition("/")
        if not plural.replace("-", "").isalnum() or not plural.islower() or "/" in sub:
            msg = f"{where}: {item!r} is not a resource plural (e.g. nodes, pods/status)"
            raise SpecError(msg)
    return items


def _seed(where: str, text: str) -> int:
    try:
        return int(text.strip(), 10)
    except ValueError:
        msg = f"{where}: {text!r} is not an integer"
        raise SpecError(msg) from None


def _parse_rule(index: int, text: str, seed: list[int]) -> Rule:
    errors: dict[str, float] = {}
    rule = Rule()
    scope = Scope()
    seen: set[str] = set()
    for raw_item in text.split(","):
        item = raw_item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        key = ALIASES.get(key, key)
        where = f"rule {index + 1}: {key}"
        if not sep:
            msg = f"rule {index + 1}: {item!r} is not key=value"
            raise SpecError(msg)
        if key in seen:
            msg = f"{where}: given twice"
            raise SpecError(msg)
        seen.add(key)
        if key in ERRORS:
            errors[key] = _probability(where, value)
        elif key == "latency":
            rule = attrs.evolve(rule, latency=_range(where, value))
        elif key == "latency-rate":
            rule = attrs.evolve(rule, latency_rate=_probability(where, value))
        elif key == "watch-drop":
            rule = attrs.evolve(rule, watch_drop=_probability(where, value))
        elif key == "watch-expire":
            rule = attrs.evolve(rule, watch_expire=_probability(where, value))
        elif key == "watch-after":
            rule = attrs.evolve(rule, watch_after=_range(where, value))
        elif key == "retry-after":
            rule = attrs.evolve(rule, retry_after=_duration(where, value))
        elif key == "verbs":
            scope = attrs.evolve(scope, verbs=_verbs(where, value))
        elif key == "resources":
            scope = attrs.evolve(scope, resources=_resources(where, value))
        elif key in ("namespaces", "users", "agents"):
            scope = attrs.evolve(scope, **{key: _list(where, value)})
        elif key == "seed":
            if seed:
                msg = f"{where}: the seed is given once per spec"
                raise SpecError(msg)
            seed.append(_seed(where, value))
        else:
            known = ", ".join(
                (*ERRORS, "latency", "latency-rate", "watch-drop", "watch-expire", "watch-after",
                 "retry-after", "verbs", "resources", "namespaces", "users", "agents", "seed")
            )  # fmt: skip
            msg = f"rule {index + 1}: unknown key {key!r} (known: {known})"
            raise SpecError(msg)
    total = sum(errors.values())
    if total > 1.0 + 1e-9:
        msg = f"rule {index + 1}: the error rates add up to {total:g}, more than 1"
        raise SpecError(msg)
    if rule.watch_drop + rule.watch_expire > 1.0 + 1e-9:
        msg = f"rule {index + 1}: watch-drop and watch-expire add up to more than 1"
        raise SpecError(msg)
    return attrs.evolve(
        rule, errors=tuple((kind, errors[kind]) for kind in ERRORS if kind in errors), scope=scope
    )


def parse(text: str) -> FaultSpec:
    """Parse a spec (see the module doc). Pure; raises SpecError. ``""`` or ``off``: none."""
    if text.strip().lower() in ("", "off", "none"):
        return FaultSpec()
    seed: list[int] = []
    rules = []
    for index, chunk in enumerate(text.split(";")):
        rule = _parse_rule(index, chunk, seed)
        if not rule.idle or rule.scope != Scope():
            rules.append(rule)
    return FaultSpec(rules=tuple(rules), seed=seed[0] if seed else None)


def _dur(seconds: float) -> str:
    """The shortest text that parses back to exactly ``seconds``."""
    for text in (f"{round(seconds * 1000, 6):g}ms", f"{seconds:g}s"):
        if flags.duration(text) == seconds:
            return text
    return f"{seconds!r}s"


def _num(value: float) -> str:
    text = f"{value:g}"
    return text if float(text) == value else repr(value)


def _span(span: tuple[float, float]) -> str:
    low, high = span
    return _dur(low) if low == high else f"{_dur(low)}..{_dur(high)}"


def render_rule(rule: Rule) -> str:
    """The canonical text of one rule. Pure."""
    items = [f"{kind}={_num(rate)}" for kind, rate in rule.errors]
    if rule.latency is not None:
        items.append(f"latency={_span(rule.latency)}")
    if rule.latency_rate != 1.0:
        items.append(f"latency-rate={_num(rule.latency_rate)}")
    if rule.watch_drop:
        items.append(f"watch-drop={_num(rule.watch_drop)}")
    if rule.watch_expire:
        items.append(f"watch-expire={_num(rule.watch_expire)}")
    if rule.watch_after != DEFAULT_WATCH_AFTER:
        items.append(f"watch-after={_span(rule.watch_after)}")
    if rule.retry_after != DEFAULT_RETRY_AFTER:
        items.append(f"retry-after={_dur(rule.retry_after)}")
    for key in ("verbs", "resources", "namespaces", "users", "agents"):
        values = getattr(rule.scope, key)
        if values:
            items.append(f"{key}={'|'.join(values)}")
    return ",".join(items)


def render(spec: FaultSpec) -> str:
    """The canonical text of a spec (``off`` when it has no rules). Pure."""
    parts = [render_rule(rule) for rule in spec.rules]
    if spec.seed is not None:
        parts = parts or [""]
        parts[0] = ",".join(p for p in (parts[0], f"seed={spec.seed}") if p)
    return ";".join(parts) if parts else "off"
