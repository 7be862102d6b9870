"""Prometheus metrics for work queues, named as client-go names them.

A program creates one :class:`PrometheusQueueMetrics` on its registry (the controller's is
``ControllerMetrics.queue``) and passes it as ``metrics=`` to every
:class:`~computedomain.kube.workqueue.RateLimitingQueue`; each queue's ``name`` becomes the
``name`` label. Exposed series: ``workqueue_depth``,
``workqueue_adds_total``, ``workqueue_retries_total``, ``workqueue_queue_duration_seconds`` and
``workqueue_work_duration_seconds``. prometheus_client is thread-safe, so the HTTP server's
scrape can read while the loop writes.
"""

from __future__ import annotations

import prometheus_client

# client-go's buckets: 10ns to 10s in decades
DURATION_BUCKETS = tuple(1e-8 * 10**i for i in range(10))


class PrometheusQueueMetrics:
    """A :class:`~computedomain.kube.workqueue.QueueMetrics` backed by prometheus_client."""

    def __init__(self, registry: prometheus_client.CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else prometheus_client.REGISTRY
        self._depth = prometheus_client.Gauge(
            "workqueue_depth", "Current depth of the work queue.", ["name"], registry=registry
        )
        self._adds = prometheus_client.Counter(
            "workqueue_adds", "Adds handled by the work queue.", ["name"], registry=registry
        )
        self._retries = prometheus_client.Counter(
            "workqueue_retries", "Rate-limited re-adds.", ["name"], registry=registry
        )
        self._latency = prometheus_client.Histogram(
            "workqueue_queue_duration_seconds",
            "Seconds an item waits in the queue before it is handed out.",
            ["name"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self._work = prometheus_client.Histogram(
            "workqueue_work_duration_seconds",
            "Seconds spent processing an item.",
            ["name"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )

    def depth(self, name: str, value: int) -> None:
        self._depth.labels(name).set(value)

    def added(self, name: str) -> None:
        self._adds.labels(name).inc()

    def retried(self, name: str) -> None:
        self._retries.labels(name).inc()

    def queue_latency(self, name: str, seconds: float) -> None:
        self._latency.labels(name).observe(max(0.0, seconds))

    def work_duration(self, name: str, seconds: float) -> None:
        self._work.labels(name).observe(max(0.0, seconds))
