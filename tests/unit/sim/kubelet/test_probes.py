"""Probe defaults and thresholds."""

from __future__ import annotations

import os

import pytest

from computedomain_sim.kubelet import containers, priority, probers
from computedomain_sim.kubelet.launch import Isolation
from computedomain_sim.kubelet.probes import ProbeKind, ProbeResult, ProbeSpec, ProbeState


def spec(kind: ProbeKind = ProbeKind.LIVENESS, **fields: object) -> ProbeSpec:
    container = {"name": "c", f"{kind}Probe": {"exec": {"command": ["true"]}, **fields}}
    out = ProbeSpec.from_container(container, kind)
    assert out is not None
    return out


def test_defaults_are_kubernetes_defaults() -> None:
    s = spec()
    assert (s.initial_delay, s.period, s.timeout, s.success_threshold, s.failure_threshold) == (
        0.0,
        10.0,
        1.0,
        1,
        3,
    )


def test_daemon_startup_probe_settings_are_read() -> None:
    s = spec(ProbeKind.STARTUP, periodSeconds=1, failureThreshold=1200, timeoutSeconds=10)
    assert (s.period, s.failure_threshold, s.timeout) == (1.0, 1200, 10.0)


def test_absent_probe_is_none() -> None:
    assert ProbeSpec.from_container({"name": "c"}, ProbeKind.READINESS) is None


@pytest.mark.parametrize(
    ("probe", "message"),
    [
        ({}, "exactly one of"),
        ({"exec": {}, "httpGet": {}}, "exactly one of"),
        ({"exec": {}, "periodSeconds": -1}, "must be positive"),
        ({"exec": {}, "successThreshold": 2}, "successThreshold must be 1"),
    ],
    ids=["no handler", "two handlers", "negative period", "liveness success threshold"],
)
def test_invalid_probes_name_the_field(probe: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        ProbeSpec.from_container(
            {"name": "c", "livenessProbe": probe or {"x": 1}}, ProbeKind.LIVENESS
        )
    assert "containers[c].livenessProbe" in str(info.value)


def run(state: ProbeState, s: ProbeSpec, outcomes: str) -> list[ProbeResult]:
    seen = []
    for outcome in outcomes:
        state = state.observe(s, outcome == "+")
        seen.append(state.result)
    return seen


def test_readiness_starts_not_ready_and_needs_success_threshold() -> None:
    s = spec(ProbeKind.READINESS, successThreshold=2, failureThreshold=2)
    state = ProbeState.initial(ProbeKind.READINESS)
    assert state.result is ProbeResult.FAILURE
    S, F = ProbeResult.SUCCESS, ProbeResult.FAILURE
    assert run(state, s, "++-+--++") == [F, S, S, S, S, F, F, S]


def test_liveness_fails_after_failure_threshold_consecutive_failures() -> None:
    s = spec(failureThreshold=3)
    U, S, F = ProbeResult.UNKNOWN, ProbeResult.SUCCESS, ProbeResult.FAILURE
    assert run(ProbeState.initial(ProbeKind.LIVENESS), s, "--+---") == [U, U, S, S, S, F]


async def test_exec_probe_commands_are_expanded_with_the_static_env() -> None:
    """As the kubelet does: literal values expand, valueFrom variables expand to nothing."""
    container = {
        "name": "daemon",
        "env": [
            {"name": "LOG_VERBOSITY", "value": "4"},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "readinessProbe": {
            "exec": {"command": ["echo", "-v", "$(LOG_VERBOSITY)", "[$(POD_IP)]", "$(NONE)"]}
        },
    }
    probe = ProbeSpec.from_container(container, ProbeKind.READINESS)
    assert probe is not None
    target = probers.ProbeTarget(
        container=container,
        pod_ip="127.9.0.1",
        pid=os.getpid(),
        env={"PATH": os.environ["PATH"]},
        isolation_mode=Isolation.PATHMAP,
        commands={},
    )
    assert await probers.run_probe(probe, target) == (True, "-v 4 [] $(NONE)")


@pytest.mark.parametrize(
    ("kind", "raised"),
    [(ProbeKind.STARTUP, priority.STARTUP_PROBE_NICE), (ProbeKind.READINESS, 0)],
    ids=["startup", "readiness"],
)
async def test_startup_probes_run_below_the_containers_priority(
    kind: ProbeKind, raised: int
) -> None:
    """A startup probe shares the machine with every simulated node's containers and gets what
    they leave; the probes whose failures have effects keep the containers' priority
    (computedomain_sim.kubelet.priority)."""
    base = os.nice(0)
    command = ["sh", "-c", "echo $(( $(nice) - $BASE ))"]
    container = {"name": "daemon", f"{kind}Probe": {"exec": {"command": command}}}
    probe = ProbeSpec.from_container(container, kind)
    assert probe is not None
    target = probers.ProbeTarget(
        container=container,
        pod_ip="127.9.0.1",
        pid=os.getpid(),
        env={"PATH": os.environ["PATH"], "BASE": str(base)},
        isolation_mode=Isolation.PATHMAP,
        commands={},
    )
    assert await probers.run_probe(probe, target) == (True, str(min(raised, 19 - base)))


@pytest.mark.parametrize(
    ("elapsed", "initial_delay", "period", "first"),
    [
        (0.0, 0.0, 10.0, 0.0),  # no startup probe, no delay: at once, as the kubelet's worker
        (7.3, 0.0, 60.0, 60.0),  # startup passed at 7.3 s: the next tick of a 60 s period
        (7.3, 0.0, 1.0, 8.0),
        (0.0, 5.0, 10.0, 10.0),  # the first tick after the initial delay
        (12.0, 25.0, 10.0, 30.0),
        (20.0, 0.0, 10.0, 20.0),  # on a tick: that tick
    ],
    ids=["immediate", "after-startup", "short-period", "initial-delay", "both", "on-tick"],
)
def test_a_probe_first_runs_on_its_next_tick(
    elapsed: float, initial_delay: float, period: float, first: float
) -> None:
    assert containers._next_tick(elapsed, initial_delay, period) == first
