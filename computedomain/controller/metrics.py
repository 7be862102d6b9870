"""The controller's Prometheus metrics, on a registry the caller supplies.

- ``nvidia_dra_compute_domain_info{status}``: upstream's gauge (docs/compatibility.md#metrics), the
number of
  domains per global status as last *written* by this controller. The bookkeeping (a map from
  domain UID to its last status) is guarded by a lock: upstream's unguarded map could crash
  under concurrent writes (fixed upstream in PR #1440). A domain is counted after a successful
  status write (upstream counted before the call, so a failed write still moved the gauge) and
  uncounted when its deletion completes.
- ``workqueue_*{name}``: depth, adds, retries, time in queue and time in work, with client-go's
  names (:attr:`ControllerMetrics.queue`, handed to the work queue).
- ``computedomain_controller_reconcile_duration_seconds{outcome}``: one reconcile, by outcome.
- ``computedomain_controller_leader``: 1 while this replica leads (or runs without election),
  0 while it stands by; standby replicas serve ``/readyz`` as ready and say so here.

Created by ``main`` (or a test) and handed to the controller; never global, so two controllers
in one process (tests) do not collide.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final

from prometheus_client import CollectorRegistry, Gauge, Histogram

from computedomain.kube.queuemetrics import PrometheusQueueMetrics

DOMAIN_INFO: Final = "nvidia_dra_compute_domain_info"
_LATENCY_BUCKETS: Final = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0)


class ControllerMetrics:
    """Every metric of one controller; thread-safe (scrapes run on another thread)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._lock = threading.Lock()
        self._last: dict[str, str] = {}
        self._domains = Gauge(
            DOMAIN_INFO,
            "ComputeDomains per global status, as last written by this controller.",
            ["status"],
            registry=self.registry,
        )
        self.queue = PrometheusQueueMetrics(self.registry)
        self._reconcile = Histogram(
            "computedomain_controller_reconcile_duration_seconds",
            "Seconds one reconcile took, by outcome (done, retry, failed).",
            ["outcome"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )

        self._leader = Gauge(
            "computedomain_controller_leader",
            "1 while this replica runs the controller, 0 while it stands by for the lease.",
            registry=self.registry,
        )
        self._leader.set(1)

    def track_leadership(self, is_leader: Callable[[], bool]) -> None:
        """Report leadership from ``is_leader`` at each scrape (leader election on)."""
        self._leader.set_function(lambda: 1.0 if is_leader() else 0.0)

    # -- the domain gauge --------------------------------------------------------------------

    def observe_status(self, uid: str, status: str) -> None:
        """Count ``uid`` under ``status`` (moving it from its previous status, if any)."""
        with self._lock:
            previous = self._last.get(uid)
            if previous == status:
                return
            if previous is not None:
                self._domains.labels(status=previous).dec()
            self._domains.labels(status=status).inc()
            self._last[uid] = status

    def forget_domain(self, uid: str) -> None:
        """Stop counting ``uid`` (its deletion completed). Idempotent."""
        with self._lock:
            previous = self._last.pop(uid, None)
            if previous is not None:
                self._domains.labels(status=previous).dec()

    def domains(self) -> dict[str, int]:
        """How many domains are counted per status (for tests and logs)."""
        with self._lock:
            counts: dict[str, int] = {}
            for status in self._last.values():
                counts[status] = counts.get(status, 0) + 1
            return counts

    # -- reconciles --------------------------------------------------------------------------

    def reconciled(self, outcome: str, seconds: float) -> None:
        self._reconcile.labels(outcome=outcome).observe(max(0.0, seconds))
