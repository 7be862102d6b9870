"""Prometheus metrics with upstream's names and labels (docs/compatibility.md#metrics).

One registry per plugin instance (the simulation runs several in one process), served by the
HTTP endpoint. Request counters and durations count successful claims only; error counters
count failed attempts, retries included; ``nvidia_dra_prepared_devices`` is recomputed from the
checkpoint after every write. Series for both operations exist from the start, at zero.
The labelled children are looked up once, here, not on every claim.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from computedomain.api import names
from computedomain.kubeletplugin.checkpoint import Checkpoint, DeviceType

PREPARE: Final = "prepare"
UNPREPARE: Final = "unprepare"
LOCK_ACQUIRE: Final = "lock_acquire"
PREPARE_DEVICES: Final = "prepare_devices"
UNPREPARE_DEVICES: Final = "unprepare_devices"
BUCKETS: Final = tuple(0.05 * 2**k for k in range(9))  # 0.05 s .. 12.8 s


class Metrics:
    """The plugin's metrics on their own registry."""

    def __init__(self, node_name: str, driver: str = names.DRIVER_NAME) -> None:
        self.node_name = node_name
        self.driver = driver
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "nvidia_dra_requests",
            "Successfully handled claims, by operation.",
            ["driver", "operation"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "nvidia_dra_request_duration_seconds",
            "Duration of successful claim attempts, by operation.",
            ["driver", "operation"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.inflight = Gauge(
            "nvidia_dra_requests_inflight",
            "Claim attempts in progress, by operation.",
            ["driver", "operation"],
            registry=self.registry,
        )
        self.prepared = Gauge(
            "nvidia_dra_prepared_devices",
            "Devices of completed prepared claims, by type.",
            ["node", "driver", "device_type"],
            registry=self.registry,
        )
        self.prepare_errors = Counter(
            "nvidia_dra_node_prepare_errors",
            "Failed prepare attempts, by kind.",
            ["driver", "error_type"],
            registry=self.registry,
        )
        self.unprepare_errors = Counter(
            "nvidia_dra_node_unprepare_errors",
            "Failed unprepare attempts, by kind.",
            ["driver", "error_type"],
            registry=self.registry,
        )
        operations = (PREPARE, UNPREPARE)
        self._requests = {op: self.requests.labels(driver, op) for op in operations}
        self._duration = {op: self.duration.labels(driver, op) for op in operations}
        self._inflight = {op: self.inflight.labels(driver, op) for op in operations}
        self._prepared = {
            str(t): self.prepared.labels(node_name, driver, str(t))
            for t in (*DeviceType, "unknown")
        }
        for child in self._prepared.values():
            child.set(0)

    def succeeded(self, operation: str, seconds: float) -> None:
        self._requests[operation].inc()
        self._duration[operation].observe(seconds)

    def failed(self, operation: str, error_type: str) -> None:
        counter = self.prepare_errors if operation == PREPARE else self.unprepare_errors
        counter.labels(self.driver, error_type).inc()

    def attempt(self, operation: str) -> Gauge:
        """The in-flight gauge child; use ``with metrics.attempt(op).track_inprogress():``."""
        return self._inflight[operation]

    def observe_checkpoint(self, checkpoint: Checkpoint) -> None:
        counts = {str(t): 0 for t in (*DeviceType, "unknown")}
        for _, entry in checkpoint.completed():
            for device in entry.devices:
                counts[str(device.type)] += 1
        for device_type, count in counts.items():
            self._prepared[device_type].set(count)
