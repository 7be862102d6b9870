"""The Deployment plan: keep ``replicas`` pods of the current template."""

from __future__ import annotations

from typing import Any

from computedomain_sim.controllers import deployment


def dep(replicas: int = 2, image: str = "i:1") -> dict[str, Any]:
    return {
        "metadata": {"name": "ctl", "namespace": "ns", "uid": "dep-uid", "generation": 1},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": "ctl"}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    }


def pod(name: str, hash_: str, created: str = "1", *, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": name,
            "labels": {"pod-template-hash": hash_},
            "creationTimestamp": created,
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]},
    }


def test_creates_the_missing_replicas_named_like_kubernetes() -> None:
    d = dep(2)
    plan = deployment.plan(d, [], ["aaaaa", "bbbbb"])
    h = deployment.template_hash(d)
    assert [c.pod["metadata"]["name"] for c in plan.creates] == [f"ctl-{h}-aaaaa", f"ctl-{h}-bbbbb"]
    owner = plan.creates[0].pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Deployment", "dep-uid", True)
    assert plan.creates[0].pod["metadata"]["labels"] == {"app": "ctl", "pod-template-hash": h}
    assert plan.status["conditions"][0]["status"] == "False"


def test_steady_state_and_status() -> None:
    d = dep(2)
    h = deployment.template_hash(d)
    plan = deployment.plan(d, [pod("a", h), pod("b", h)], [])
    assert plan.creates == ()
    assert plan.deletes == ()
    assert plan.status["readyReplicas"] == 2
    assert plan.status["conditions"][0]["reason"] == "MinimumReplicasAvailable"


def test_scale_down_removes_the_newest() -> None:
    d = dep(1)
    h = deployment.template_hash(d)
    plan = deployment.plan(d, [pod("old", h, "1"), pod("new", h, "2")], [])
    assert [x.name for x in plan.deletes] == ["new"]


def test_template_change_replaces_pods() -> None:
    d = dep(1, image="i:2")
    plan = deployment.plan(d, [pod("old", "stale")], ["zzzzz"])
    assert [x.name for x in plan.deletes] == ["old"]
    assert len(plan.creates) == 1


def test_template_hash_is_stable_and_changes_with_the_template() -> None:
    assert deployment.template_hash(dep(image="a")) == deployment.template_hash(dep(image="a"))
    assert deployment.template_hash(dep(image="a")) != deployment.template_hash(dep(image="b"))
