"""Probe settings and the per-probe state machine, as the kubelet defines them.

Called by :mod:`.containers` (which runs the probes on their schedule with :mod:`.probers`).
Pure.

Defaults: period 10 s, timeout 1 s, success threshold 1, failure threshold 3, no initial delay.
A probe's result flips to Success after ``successThreshold`` consecutive successes and to
Failure after ``failureThreshold`` consecutive failures; until then it keeps its previous
result. Readiness starts as Failure (not ready until a success), liveness and startup as
Success/Unknown. While a startup probe has not succeeded, liveness and readiness do not run.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["ProbeKind", "ProbeResult", "ProbeSpec", "ProbeState"]


class ProbeKind(enum.StrEnum):
    """Which probe of a container."""

    STARTUP = "startup"
    LIVENESS = "liveness"
    READINESS = "readiness"


class ProbeResult(enum.StrEnum):
    """The probe's current verdict."""

    UNKNOWN = "Unknown"
    SUCCESS = "Success"
    FAILURE = "Failure"


@attrs.frozen
class ProbeSpec:
    """One probe of a container: the handler (``exec``/``httpGet``/``tcpSocket``/``grpc``) and
    its timing."""

    kind: ProbeKind
    handler: Mapping[str, Any]
    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3

    @classmethod
    def from_container(cls, container: Mapping[str, Any], kind: ProbeKind) -> ProbeSpec | None:
        """The container's ``<kind>Probe`` with Kubernetes' defaults, or None. Pure.

        Raises ValueError naming the field for a probe without a handler or bad numbers.
        """
        raw = container.get(f"{kind}Probe")
        if not raw:
            return None
        where = f"containers[{container.get('name', '')}].{kind}Probe"
        handlers = [k for k in ("exec", "httpGet", "tcpSocket", "grpc") if k in raw]
        if len(handlers) != 1:
            msg = f"{where}: exactly one of exec, httpGet, tcpSocket, grpc is required"
            raise ValueError(msg)
        spec = cls(
            kind=kind,
            handler={handlers[0]: raw[handlers[0]]},
            initial_delay=float(raw.get("initialDelaySeconds") or 0),
            period=float(raw.get("periodSeconds") or 10),
            timeout=float(raw.get("timeoutSeconds") or 1),
            success_threshold=int(raw.get("successThreshold") or 1),
            failure_threshold=int(raw.get("failureThreshold") or 3),
        )
        if spec.period <= 0 or spec.timeout <= 0 or spec.failure_threshold < 1:
            msg = f"{where}: period, timeout and failureThreshold must be positive"
            raise ValueError(msg)
        if kind is not ProbeKind.READINESS and spec.success_threshold != 1:
            msg = f"{where}.successThreshold must be 1"
            raise ValueError(msg)
        return spec


@attrs.frozen
class ProbeState:
    """The verdict of one probe and the streak that leads to the next."""

    result: ProbeResult
    successes: int = 0
    failures: int = 0

    @classmethod
    def initial(cls, kind: ProbeKind) -> ProbeState:
        """Readiness starts as Failure; the others as Unknown (not yet failed)."""
        return cls(ProbeResult.FAILURE if kind is ProbeKind.READINESS else ProbeResult.UNKNOWN)

    def observe(self, spec: ProbeSpec, success: bool) -> ProbeState:
        """The state after one probe run. Pure."""
        if success:
            successes = self.successes + 1
            result = ProbeResult.SUCCESS if successes >= spec.success_threshold else self.result
            return ProbeState(result, successes, 0)
        failures = self.failures + 1
        result = ProbeResult.FAILURE if failures >= spec.failure_threshold else self.result
        return ProbeState(result, 0, failures)
