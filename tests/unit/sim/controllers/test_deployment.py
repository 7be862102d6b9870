"""The Deployment plan: ReplicaSets per template with the ``pod-template-hash`` label and
revision annotation, rolling updates within ``maxSurge``/``maxUnavailable``, Recreate,
history cleanup, and kube's status and conditions. The rollouts are played step by step
against a model of the ReplicaSet controller and the kubelets."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain_sim.controllers import deployment

NOW = 1_800_000_000.0


def dep(replicas: int = 3, image: str = "i:1", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "ns", "uid": "dep-uid", "generation": 1},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            **spec,
        },
        "status": {},
    }


class Cluster:
    """The ReplicaSets of one Deployment, with a ReplicaSet controller and kubelets that
    remove pods at once and make new ones available one step later."""

    def __init__(self, d: dict[str, Any]) -> None:
        self.d = d
        self.sets: dict[str, dict[str, Any]] = {}
        self.now = NOW
        self.created = 0
        self.plans: list[deployment.DeploymentPlan] = []

    def available(self) -> int:
        return sum(r["status"]["availableReplicas"] for r in self.sets.values())

    def step(self) -> deployment.DeploymentPlan:
        running = any(
            r["status"]["replicas"] > 0
            for r in self.sets.values()
            if not deployment.equal_ignore_hash(r["spec"]["template"], self.d["spec"]["template"])
        )
        plan = deployment.plan(
            self.d, list(self.sets.values()), now=self.now, old_pods_running=running
        )
        self.plans.append(plan)
        for body in plan.creates:
            rs = copy.deepcopy(body)
            self.created += 1
            rs["metadata"].update(
                uid=f"rs-{self.created}", creationTimestamp=f"{self.created:04}", generation=1
            )
            rs["status"] = {"replicas": 0, "availableReplicas": 0, "readyReplicas": 0}
            self.sets[rs["metadata"]["name"]] = rs
        for body in plan.updates:
            self.sets[body["metadata"]["name"]] = copy.deepcopy(body)
        for name, _uid in plan.deletes:
            del self.sets[name]
        self.d["status"] = plan.status
        if plan.revision is not None:
            self.d["metadata"].setdefault("annotations", {})[deployment.REVISION] = plan.revision
        # Scaled-down pods go at once; the status then trails the spec.
        for rs in self.sets.values():
            want = rs["spec"]["replicas"]
            for field in ("replicas", "availableReplicas", "readyReplicas"):
                rs["status"][field] = min(rs["status"][field], want)
            rs["status"]["observedGeneration"] = 1
        return plan

    def settle(self) -> None:
        """The kubelets start every wanted pod and it becomes available."""
        for rs in self.sets.values():
            want = rs["spec"]["replicas"]
            rs["status"].update(replicas=want, availableReplicas=want, readyReplicas=want)
        self.now += 1

    def run(self, steps: int = 100) -> None:
        for _ in range(steps):
            plan = self.step()
            self.settle()
            if not (plan.creates or plan.updates or plan.deletes) and self.complete():
                return
        raise AssertionError("the rollout did not finish")

    def complete(self) -> bool:
        s = self.d["status"]
        want = self.d["spec"]["replicas"]
        return bool(s["updatedReplicas"] == s["replicas"] == s["availableReplicas"] == want)

    def progressing(self) -> dict[str, Any]:
        return next(c for c in self.d["status"]["conditions"] if c["type"] == "Progressing")


def test_the_first_sync_creates_a_replica_set_with_the_hash_and_revision_one() -> None:
    d = dep(3)
    plan = deployment.plan(d, [], now=NOW)
    (rs,) = plan.creates
    h = deployment.template_hash(d["spec"]["template"])
    assert rs["metadata"]["name"] == f"web-{h}"
    assert rs["spec"]["replicas"] == 3
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "web", "pod-template-hash": h}}
    assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "web", "pod-template-hash": h}
    assert rs["metadata"]["annotations"][deployment.REVISION] == "1"
    owner = rs["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Deployment", "dep-uid", True)
    assert plan.revision == "1"
    progressing = plan.status["conditions"][-1]
    assert (progressing["type"], progressing["reason"]) == ("Progressing", "NewReplicaSetCreated")
    assert progressing["message"] == f'Created new replica set "web-{h}"'
    assert plan.events == (("ScalingReplicaSet", f"Scaled up replica set web-{h} from 0 to 3"),)


def test_the_hash_is_kubes_encoding_of_an_fnv32a_sum() -> None:
    h = deployment.template_hash({"a": 1})
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert 1 <= len(h) <= 10
    assert deployment.template_hash({"a": 1}) == h
    assert deployment.template_hash({"a": 2}) != h
    assert deployment.template_hash({"a": 1}, 1) != h


def test_a_new_deployment_becomes_available_with_kubes_conditions() -> None:
    c = Cluster(dep(3))
    c.run()
    status = c.d["status"]
    assert status["observedGeneration"] == 1
    assert (status["readyReplicas"], status["unavailableReplicas"]) == (3, 0)
    available = next(x for x in status["conditions"] if x["type"] == "Available")
    assert (available["status"], available["reason"]) == ("True", "MinimumReplicasAvailable")
    progressing = c.progressing()
    assert (progressing["status"], progressing["reason"]) == ("True", "NewReplicaSetAvailable")
    (name,) = c.sets
    assert progressing["message"] == f'ReplicaSet "{name}" has successfully progressed.'


@settings(max_examples=60, deadline=None)
@given(
    replicas=st.integers(1, 8),
    surge=st.sampled_from([0, 1, 2, "25%", "50%", "100%"]),
    unavailable=st.sampled_from([0, 1, 2, "25%", "50%"]),
)
def test_a_rolling_update_keeps_within_surge_and_availability(
    replicas: int, surge: int | str, unavailable: int | str
) -> None:
    rolling = {"maxSurge": surge, "maxUnavailable": unavailable}
    c = Cluster(dep(replicas, strategy={"type": "RollingUpdate", "rollingUpdate": rolling}))
    c.run()
    max_surge, max_unavailable = deployment.fenceposts(c.d)
    c.d["spec"]["template"]["spec"]["containers"][0]["image"] = "i:2"
    c.d["metadata"]["generation"] = 2
    for _ in range(100):
        plan = c.step()
        assert sum(r["spec"]["replicas"] for r in c.sets.values()) <= replicas + max_surge
        assert c.available() >= replicas - max_unavailable
        c.settle()
        if not (plan.creates or plan.updates or plan.deletes) and c.complete():
            break
    else:
        raise AssertionError("the rollout did not finish")
    new = [r for r in c.sets.values() if r["spec"]["template"]["spec"]["containers"][0]["image"]
           == "i:2"]  # fmt: skip
    assert [r["spec"]["replicas"] for r in new] == [replicas]
    assert deployment.revision(new[0]) == 2
    assert all(r["spec"]["replicas"] == 0 for r in c.sets.values() if r is not new[0])
    assert c.progressing()["reason"] == "NewReplicaSetAvailable"
    assert c.d["metadata"]["annotations"][deployment.REVISION] == "2"


def test_recreate_scales_the_old_replica_set_down_before_creating_the_new_one() -> None:
    c = Cluster(dep(2, strategy={"type": "Recreate"}))
    c.run()
    c.d["spec"]["template"]["spec"]["containers"][0]["image"] = "i:2"
    first = c.step()
    assert first.creates == ()
    assert [u["spec"]["replicas"] for u in first.updates] == [0]
    c.settle()
    second = c.step()
    assert len(second.creates) == 1
    assert second.creates[0]["spec"]["replicas"] == 2
    c.settle()
    c.run()
    assert sorted(r["spec"]["replicas"] for r in c.sets.values()) == [0, 2]


def test_recreate_waits_while_old_pods_run() -> None:
    c = Cluster(dep(2, strategy={"type": "Recreate"}))
    c.run()
    old = next(iter(c.sets.values()))
    old["spec"]["replicas"] = 0  # scaled down, but its pods still run
    c.d["spec"]["template"]["spec"]["containers"][0]["image"] = "i:2"
    plan = deployment.plan(c.d, [old], now=c.now, old_pods_running=True)
    assert plan.creates == ()


def test_a_rollback_reuses_the_old_replica_set_with_the_next_revision() -> None:
    c = Cluster(dep(2))
    c.run()
    first = next(iter(c.sets))
    c.d["spec"]["template"]["spec"]["containers"][0]["image"] = "i:2"
    c.run()
    c.d["spec"]["template"]["spec"]["containers"][0]["image"] = "i:1"
    c.run()
    assert len(c.sets) == 2
    assert deployment.revision(c.sets[first]) == 3
    assert c.sets[first]["spec"]["replicas"] == 2


def test_old_replica_sets_beyond_the_history_limit_are_deleted_oldest_revision_first() -> None:
    c = Cluster(dep(1, revisionHistoryLimit=1))
    for image in ("i:1", "i:2", "i:3"):
        c.d["spec"]["template"]["spec"]["containers"][0]["image"] = image
        c.run()
    revisions = sorted(deployment.revision(r) for r in c.sets.values())
    assert revisions == [2, 3]


def test_scaling_a_settled_deployment_resizes_its_replica_set() -> None:
    c = Cluster(dep(2))
    c.run()
    c.d["spec"]["replicas"] = 5
    c.run()
    assert [r["spec"]["replicas"] for r in c.sets.values()] == [5]
    c.d["spec"]["replicas"] = 1
    c.run()
    assert [r["spec"]["replicas"] for r in c.sets.values()] == [1]
    (rs,) = c.sets.values()
    assert rs["metadata"]["annotations"][deployment.DESIRED_REPLICAS] == "1"


def test_a_stalled_rollout_times_out_at_the_progress_deadline() -> None:
    c = Cluster(dep(1, progressDeadlineSeconds=60))
    c.step()  # the ReplicaSet is created, its pod never becomes available
    plan = c.step()
    assert plan.recheck is not None
    assert c.progressing()["reason"] == "NewReplicaSetCreated"
    c.now += 61
    c.step()
    progressing = c.progressing()
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    available = next(x for x in c.d["status"]["conditions"] if x["type"] == "Available")
    assert available["reason"] == "MinimumReplicasUnavailable"


def test_a_paused_deployment_starts_no_rollout() -> None:
    c = Cluster(dep(2))
    c.run()
    c.d["spec"]["paused"] = True
    c.d["spec"]["template"]["spec"]["containers"][0]["image"] = "i:2"
    plan = c.step()
    assert plan.creates == ()
    assert c.progressing()["reason"] == "DeploymentPaused"
    c.d["spec"]["paused"] = False
    c.run()
    assert c.progressing()["reason"] == "NewReplicaSetAvailable"
    assert len(c.sets) == 2


def test_replica_sets_of_other_owners_are_ignored() -> None:
    d = dep(1)
    other = deployment.plan(d, [], now=NOW).creates[0]
    other["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    plan = deployment.plan(d, [other], now=NOW)
    assert len(plan.creates) == 1


def test_a_deployment_being_deleted_is_not_rolled_out() -> None:
    d = dep(1)
    d["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z"
    plan = deployment.plan(d, [], now=NOW)
    assert (plan.creates, plan.updates, plan.deletes) == ((), (), ())
