"""The Job controller's plan: pods up to parallelism until completions succeeded, failures up to
the backoff limit, and the conditions and counters kube-controller-manager writes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from computedomain_sim.controllers import job

NOW = "2026-12-05T09:00:00Z"
SUFFIXES = [f"s{i}" for i in range(10)]


def _job(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "work", "namespace": "ns", "uid": "u1"},
        "spec": {
            "completions": 1,
            "parallelism": 1,
            "backoffLimit": 6,
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"restartPolicy": "Never"}},
            **spec,
        },
    }


def _pod(name: str, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": name}, "status": {"phase": phase}}


def _types(plan: job.JobPlan) -> list[str]:
    return [c["type"] for c in plan.status.get("conditions", [])]


def test_a_new_job_gets_its_pod_owned_and_labelled() -> None:
    plan = job.plan(_job(), [], SUFFIXES, NOW)
    assert len(plan.creates) == 1
    pod = plan.creates[0].pod
    assert pod["metadata"]["name"] == "work-s0"
    assert pod["metadata"]["labels"] == {"a": "b"}
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert plan.status["startTime"] == NOW
    assert _types(plan) == []


def test_enough_successes_complete_the_job() -> None:
    plan = job.plan(
        _job(completions=2), [_pod("p1", "Succeeded"), _pod("p2", "Succeeded")], SUFFIXES, NOW
    )
    assert plan.creates == ()
    assert _types(plan) == ["SuccessCriteriaMet", "Complete"]
    assert plan.status["succeeded"] == 2
    assert plan.status["completionTime"] == NOW
    done = {**_job(completions=2), "status": plan.status}
    assert job.finished(done) == "Complete"
    again = job.plan(done, [], SUFFIXES, NOW)
    assert again.creates == ()
    assert again.status["succeeded"] == 2, "counted pods stay counted once they are gone"


def test_failures_beyond_the_backoff_limit_fail_the_job() -> None:
    pods = [_pod("f1", "Failed"), _pod("f2", "Failed"), _pod("r", "Running")]
    plan = job.plan(_job(backoffLimit=1, parallelism=2, completions=3), pods, SUFFIXES, NOW)
    assert _types(plan) == ["FailureTarget", "Failed"]
    assert [d.name for d in plan.deletes] == ["r"]
    assert plan.creates == ()


def test_a_suspended_job_runs_nothing() -> None:
    assert job.plan(_job(suspend=True), [], SUFFIXES, NOW).creates == ()


@given(
    completions=st.integers(1, 6),
    parallelism=st.integers(1, 4),
    phases=st.lists(st.sampled_from(["Running", "Succeeded", "Pending"]), max_size=8),
)
def test_never_more_active_pods_than_parallelism_or_remaining_completions(
    completions: int, parallelism: int, phases: list[str]
) -> None:
    pods = [_pod(f"p{i}", phase) for i, phase in enumerate(phases)]
    plan = job.plan(_job(completions=completions, parallelism=parallelism), pods, SUFFIXES, NOW)
    active = sum(1 for p in phases if p != "Succeeded")
    succeeded = len(phases) - active
    remaining = max(completions - succeeded, 0)
    if remaining == 0:
        assert _types(plan)[-1] == "Complete"
        assert plan.creates == ()
    else:
        assert active + len(plan.creates) == max(active, min(parallelism, remaining))
