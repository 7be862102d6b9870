"""The Prometheus queue metrics record what the queue reports, under client-go's names."""

from __future__ import annotations

import prometheus_client

from computedomain.kube.queuemetrics import PrometheusQueueMetrics
from computedomain.kube.workqueue import RateLimitingQueue
from computedomain.runtime.clock import ManualClock


async def test_queue_reports_to_prometheus() -> None:
    registry = prometheus_client.CollectorRegistry()
    clock = ManualClock()
    queue: RateLimitingQueue[str] = RateLimitingQueue(
        name="cds", clock=clock, metrics=PrometheusQueueMetrics(registry), qps=0
    )
    queue.add("a")
    queue.add("b")
    clock.advance(0.5)
    key = await queue.get()
    clock.advance(2.0)
    queue.done(key)
    queue.add_rate_limited(key)

    def value(name: str) -> float | None:
        return registry.get_sample_value(name, {"name": "cds"})

    assert value("workqueue_adds_total") == 2
    assert value("workqueue_depth") == 1
    assert value("workqueue_retries_total") == 1
    assert value("workqueue_queue_duration_seconds_count") == 1
    assert value("workqueue_queue_duration_seconds_sum") == 0.5
    assert value("workqueue_work_duration_seconds_sum") == 2.0
    queue.shutdown()
