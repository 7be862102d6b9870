"""The StatefulSet controller's plan: ordinals created in order once the lower ones are ready
(or all at once in Parallel), removed from the top, replaced one at a time from the top when
the template changes."""

from __future__ import annotations

from typing import Any

from computedomain_sim.controllers import statefulset


def _sts(replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "db", "namespace": "ns", "uid": "u", "generation": 1},
        "spec": {
            "replicas": replicas,
            "serviceName": "db",
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": []}},
            **spec,
        },
    }


def _pod(ordinal: int, *, ready: bool = True, revision: str | None = None) -> dict[str, Any]:
    labels = {statefulset.REVISION_LABEL: revision or _revision()}
    return {
        "metadata": {
            "name": f"db-{ordinal}",
            "namespace": "ns",
            "uid": f"p{ordinal}",
            "labels": labels,
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def _revision() -> str:
    return statefulset.plan(_sts(), []).status["updateRevision"]


def test_ordinals_start_one_at_a_time_in_order() -> None:
    first = statefulset.plan(_sts(), [])
    assert [c.pod["metadata"]["name"] for c in first.creates] == ["db-0"]
    pod = first.creates[0].pod
    assert pod["spec"]["hostname"] == "db-0"
    assert pod["spec"]["subdomain"] == "db"
    assert pod["metadata"]["labels"][statefulset.POD_INDEX_LABEL] == "0"
    assert statefulset.plan(_sts(), [_pod(0, ready=False)]).creates == ()
    after = statefulset.plan(_sts(), [_pod(0)])
    assert [c.pod["metadata"]["name"] for c in after.creates] == ["db-1"]


def test_parallel_starts_every_ordinal() -> None:
    plan = statefulset.plan(_sts(podManagementPolicy="Parallel"), [])
    assert [c.pod["metadata"]["name"] for c in plan.creates] == ["db-0", "db-1", "db-2"]


def test_scaling_down_removes_the_highest_ordinal_first() -> None:
    plan = statefulset.plan(_sts(replicas=1), [_pod(0), _pod(1), _pod(2)])
    assert [d.name for d in plan.deletes] == ["db-2"]


def test_a_new_template_replaces_the_highest_outdated_pod_once_all_are_ready() -> None:
    old = [_pod(0, revision="db-old"), _pod(1, revision="db-old"), _pod(2, revision="db-old")]
    assert [d.name for d in statefulset.plan(_sts(), old).deletes] == ["db-2"]
    partitioned = _sts(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 3}})
    assert statefulset.plan(partitioned, old).deletes == ()
    on_delete = _sts(updateStrategy={"type": "OnDelete"})
    assert statefulset.plan(on_delete, old).deletes == ()
    status = statefulset.plan(_sts(), [_pod(0), _pod(1), _pod(2)]).status
    assert (status["replicas"], status["readyReplicas"], status["updatedReplicas"]) == (3, 3, 3)
