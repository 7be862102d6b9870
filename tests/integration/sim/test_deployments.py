"""Deployments on the simulated cluster roll out through ReplicaSets, as with
kube-controller-manager: the ReplicaSet carries the ``pod-template-hash`` and revision, the
pods are the ReplicaSet's, a template change rolls to a second ReplicaSet, the scale
subresource resizes, and deleting the Deployment (background or foreground) removes its
ReplicaSets and pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from computedomain.kube import errors
from computedomain.kube.resources import DEPLOYMENTS, PODS
from computedomain.kube.rest import Api
from computedomain_sim.controllers.replicaset_controller import REPLICA_SETS
from tests.support.clusters import running_cluster
from tests.support.polling import eventually

from .helpers import condition, namespace


def deployment(ns: str, image: str = "python", replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "main",
                            "image": image,
                            "command": ["python3", "-c", "import time; time.sleep(600)"],
                            "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1},
                        }
                    ],
                },
            },
        },
    }


async def rolled_out(api: Api, ns: str) -> dict[str, Any]:
    async def done() -> dict[str, Any] | None:
        d = await api.get(DEPLOYMENTS, "web", ns)
        st, want = d.get("status") or {}, d["spec"]["replicas"]
        progressing = condition(d, "Progressing") or {}
        ok = (
            st.get("observedGeneration") == d["metadata"]["generation"]
            and st.get("updatedReplicas") == st.get("replicas") == want
            and st.get("availableReplicas") == want
            and progressing.get("reason") == "NewReplicaSetAvailable"
        )
        return d if ok else None

    return await eventually(done, within=60, what="the Deployment rolled out")


async def test_a_deployment_rolls_out_through_replica_sets(tmp_path: Path) -> None:
    async with running_cluster(tmp_path / "sim") as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "roll")
        await api.create(DEPLOYMENTS, deployment(ns))
        first = await rolled_out(api, ns)
        assert first["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        assert (condition(first, "Available") or {}).get("reason") == "MinimumReplicasAvailable"
        (rs,) = (await api.list_all(REPLICA_SETS, ns))[0]
        hash_ = rs["metadata"]["labels"]["pod-template-hash"]
        assert rs["metadata"]["name"] == f"web-{hash_}"
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": hash_}
        assert rs["metadata"]["ownerReferences"][0]["uid"] == first["metadata"]["uid"]
        assert rs["status"]["availableReplicas"] == 2
        pods, _ = await api.list_all(PODS, ns)
        assert len(pods) == 2
        for pod in pods:
            (owner,) = pod["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["uid"], owner["controller"]) == (
                "ReplicaSet",
                rs["metadata"]["uid"],
                True,
            )
            assert pod["metadata"]["labels"]["pod-template-hash"] == hash_

        await api.patch(
            DEPLOYMENTS, "web", {"spec": {"template": {"metadata": {"annotations": {"v": "2"}}}}},
            namespace=ns,
        )  # fmt: skip
        second = await rolled_out(api, ns)
        assert second["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        sets = {
            r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: r
            for r in (await api.list_all(REPLICA_SETS, ns))[0]
        }
        assert sorted(sets) == ["1", "2"]
        assert (sets["1"]["spec"]["replicas"], sets["2"]["spec"]["replicas"]) == (0, 2)

        await api.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 3}}, namespace=ns,
                        subresource="scale")  # fmt: skip
        scaled = await rolled_out(api, ns)
        assert scaled["status"]["readyReplicas"] == 3


@pytest.mark.parametrize("propagation", ["Background", "Foreground"])
async def test_deleting_a_deployment_removes_its_replica_sets_and_pods(
    tmp_path: Path, propagation: str
) -> None:
    async with running_cluster(tmp_path / "sim") as cluster:
        api = cluster.api
        assert api is not None
        ns = await namespace(api, "gone")
        await api.create(DEPLOYMENTS, deployment(ns, replicas=1))
        await rolled_out(api, ns)
        await api.delete(DEPLOYMENTS, "web", ns, propagation=propagation)

        async def empty() -> bool:
            for resource in (DEPLOYMENTS, REPLICA_SETS, PODS):
                if (await api.list_all(resource, ns))[0]:
                    return False
            return True

        await eventually(empty, within=60, what="the Deployment, ReplicaSet and pod gone")
        with pytest.raises(errors.NotFound):
            await api.get(DEPLOYMENTS, "web", ns)
