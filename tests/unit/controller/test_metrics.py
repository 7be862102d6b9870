"""Metrics bookkeeping: the domain gauge moves on writes only and is safe across threads."""

from __future__ import annotations

import threading

from prometheus_client import generate_latest

from computedomain.controller.metrics import ControllerMetrics


def _sample(metrics: ControllerMetrics, status: str) -> float | None:
    return metrics.registry.get_sample_value("nvidia_dra_compute_domain_info", {"status": status})


def test_gauge_is_absent_until_the_first_write() -> None:
    metrics = ControllerMetrics()
    assert _sample(metrics, "Ready") is None
    assert b"nvidia_dra_compute_domain_info{" not in generate_latest(metrics.registry)


def test_gauge_moves_between_statuses_and_forgets() -> None:
    metrics = ControllerMetrics()
    metrics.observe_status("a", "NotReady")
    metrics.observe_status("b", "NotReady")
    metrics.observe_status("a", "Ready")
    metrics.observe_status("a", "Ready")  # unchanged: no-op
    assert (_sample(metrics, "Ready"), _sample(metrics, "NotReady")) == (1.0, 1.0)
    metrics.forget_domain("a")
    metrics.forget_domain("a")
    metrics.forget_domain("never-seen")
    assert (_sample(metrics, "Ready"), _sample(metrics, "NotReady")) == (0.0, 1.0)
    assert metrics.domains() == {"NotReady": 1}


def test_gauge_bookkeeping_is_consistent_under_threads() -> None:
    metrics = ControllerMetrics()

    def churn(offset: int) -> None:
        for i in range(2000):
            uid = f"d{(i + offset) % 50}"
            metrics.observe_status(uid, "Ready" if i % 3 else "NotReady")
            if i % 7 == 0:
                metrics.forget_domain(uid)

    threads = [threading.Thread(target=churn, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = metrics.domains()
    assert (_sample(metrics, "Ready") or 0) == counts.get("Ready", 0)
    assert (_sample(metrics, "NotReady") or 0) == counts.get("NotReady", 0)


def test_queue_and_reconcile_metrics_are_exposed() -> None:
    metrics = ControllerMetrics()
    metrics.queue.added("cd")
    metrics.queue.depth("cd", 3)
    metrics.queue.retried("cd")
    metrics.queue.queue_latency("cd", 0.02)
    metrics.queue.work_duration("cd", 0.01)
    metrics.reconciled("done", 0.01)
    text = generate_latest(metrics.registry).decode()
    for name in (
        'workqueue_depth{name="cd"} 3.0',
        'workqueue_adds_total{name="cd"} 1.0',
        'workqueue_retries_total{name="cd"} 1.0',
        'workqueue_queue_duration_seconds_count{name="cd"} 1.0',
        'workqueue_work_duration_seconds_count{name="cd"} 1.0',
        'computedomain_controller_reconcile_duration_seconds_count{outcome="done"} 1.0',
    ):
        assert name in text


def test_leadership_gauge() -> None:
    metrics = ControllerMetrics()
    assert metrics.registry.get_sample_value("computedomain_controller_leader") == 1.0
    leading = [False]
    metrics.track_leadership(lambda: leading[0])
    assert metrics.registry.get_sample_value("computedomain_controller_leader") == 0.0
    leading[0] = True
    assert metrics.registry.get_sample_value("computedomain_controller_leader") == 1.0
