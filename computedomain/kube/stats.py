"""Counters of API requests by (verb, resource, HTTP status code).

Every request :class:`~computedomain.kube.rest.Api` sends is recorded here, retries and refusals
included (409 conflicts and 429 throttles are what the benchmarks' "API requests per domain by
verb" figures are made of). Verbs are get, list, watch, create, update, patch, delete; writes
to a subresource are counted as ``update/status``, ``patch/status`` and so on; requests sent
with ``Api.request`` are counted under the lower-case HTTP method. Status 0 means no HTTP
answer. Guarded by a lock, so programs that read it from a metrics thread see consistent numbers.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

StatKey = tuple[str, str, int]  # (verb, resource plural, status code)


class RequestStats:
    """Thread-safe request counters; cheap enough to record on every request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[StatKey] = Counter()

    def record(self, verb: str, resource: str, code: int) -> None:
        with self._lock:
            self._counts[(verb, resource, code)] += 1

    def snapshot(self) -> dict[StatKey, int]:
        """A copy of every counter."""
        with self._lock:
            return dict(self._counts)

    def total(
        self, *, verb: str | None = None, resource: str | None = None, code: int | None = None
    ) -> int:
        """The sum over counters matching every given filter."""
        with self._lock:
            return sum(
                n
                for (v, r, c), n in self._counts.items()
                if (verb is None or v == verb)
                and (resource is None or r == resource)
                and (code is None or c == code)
            )

    def by_verb(self) -> dict[str, int]:
        """Totals per verb (all resources and codes)."""
        out: Counter[str] = Counter()
        for (verb, _, _), n in self.snapshot().items():
            out[verb] += n
        return dict(out)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    def as_json(self) -> list[dict[str, Any]]:
        """Rows ``{verb, resource, code, count}`` sorted for stable output (benchmarks)."""
        return [
            {"verb": v, "resource": r, "code": c, "count": n}
            for (v, r, c), n in sorted(self.snapshot().items())
        ]
