"""Deletion: finalizers, graceful pod deletion, preconditions, propagation policies, owner
garbage collection, namespace and CRD teardown."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from kubernetes import client

from tests.conftest import CRD_FIXTURES
from tests.support.polling import eventually_sync


def _exists(read: Callable[[], object]) -> bool:
    try:
        read()
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def _cm(name: str, **meta: object) -> dict[str, object]:
    return {"metadata": {"name": name, **meta}}


def test_finalizer_holds_object_until_removed(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, _cm("f", finalizers=["example.com/hold"]))
    core.delete_namespaced_config_map("f", namespace)
    held = core.read_namespaced_config_map("f", namespace)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.deletion_grace_period_seconds == 0
    with pytest.raises(client.ApiException) as exc:
        core.patch_namespaced_config_map(
            "f", namespace, {"metadata": {"finalizers": ["example.com/hold", "x.io/new"]}}
        )
    assert exc.value.status == 422
    assert "no new finalizers can be added" in json.loads(exc.value.body)["message"]
    core.patch_namespaced_config_map("f", namespace, {"metadata": {"$patch": "replace"}})
    assert not _exists(lambda: core.read_namespaced_config_map("f", namespace))


def test_pod_graceful_deletion(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    pod = {
        "metadata": {"name": "p"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
    }
    core.create_namespaced_pod(namespace, pod)
    deleted = core.delete_namespaced_pod("p", namespace)
    assert deleted.metadata.deletion_grace_period_seconds == 30
    assert core.read_namespaced_pod("p", namespace).metadata.deletion_timestamp is not None
    shorter = core.delete_namespaced_pod("p", namespace, grace_period_seconds=5)
    assert shorter.metadata.deletion_grace_period_seconds == 5
    uid = shorter.metadata.uid
    core.delete_namespaced_pod(
        "p",
        namespace,
        body=client.V1DeleteOptions(
            grace_period_seconds=0, preconditions=client.V1Preconditions(uid=uid)
        ),
    )
    assert not _exists(lambda: core.read_namespaced_pod("p", namespace))
    unscheduled = {"metadata": {"name": "u"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    core.create_namespaced_pod(namespace, unscheduled)
    core.delete_namespaced_pod("u", namespace)
    assert not _exists(lambda: core.read_namespaced_pod("u", namespace))


def test_delete_preconditions(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, _cm("pc"))
    body = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other"))
    with pytest.raises(client.ApiException) as exc:
        core.delete_namespaced_config_map("pc", namespace, body=body)
    assert exc.value.status == 409
    failed = json.loads(exc.value.body)
    uid = core.read_namespaced_config_map("pc", namespace).metadata.uid
    assert failed["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "pc": the UID in the precondition (other) '
        f"does not match the UID in record ({uid}). The object might have been deleted and then "
        "recreated"
    )
    assert failed["details"] == {"name": "pc", "kind": "ConfigMap"}
    body = client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="1"))
    with pytest.raises(client.ApiException) as exc:
        core.delete_namespaced_config_map("pc", namespace, body=body)
    assert exc.value.status == 409
    assert "The object might have been modified" in json.loads(exc.value.body)["message"]


def test_a_deleted_core_objects_status_names_no_group(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, _cm("gone"))
    done = api_client.sanitize_for_serialization(
        core.delete_namespaced_config_map("gone", namespace)
    )
    assert done["details"] == {"name": "gone", "kind": "configmaps", "uid": done["details"]["uid"]}


def _owner_ref(owner: client.V1ConfigMap, **extra: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
        **extra,
    }


def test_background_gc_deletes_dependents(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    owner = core.create_namespaced_config_map(namespace, _cm("owner"))
    core.create_namespaced_config_map(namespace, _cm("dep", ownerReferences=[_owner_ref(owner)]))
    core.delete_namespaced_config_map("owner", namespace)
    eventually_sync(lambda: not _exists(lambda: core.read_namespaced_config_map("dep", namespace)))


def test_gc_deletes_dependents_of_missing_or_mismatched_owners(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    real = core.create_namespaced_config_map(namespace, _cm("real"))
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "no-such-uid"}
    wrong_uid = {**_owner_ref(real), "uid": "not-the-real-uid"}
    core.create_namespaced_config_map(namespace, _cm("orphan1", ownerReferences=[ghost]))
    core.create_namespaced_config_map(namespace, _cm("orphan2", ownerReferences=[wrong_uid]))
    core.create_namespaced_config_map(
        namespace, _cm("mixed", ownerReferences=[_owner_ref(real), ghost])
    )
    for name in ("orphan1", "orphan2"):
        eventually_sync(
            lambda n=name: not _exists(lambda: core.read_namespaced_config_map(n, namespace))
        )

    def dangling_removed() -> bool:
        refs = core.read_namespaced_config_map("mixed", namespace).metadata.owner_references
        return [r.name for r in refs] == ["real"]

    eventually_sync(dangling_removed)


def test_foreground_deletion_waits_for_blocking_dependents(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    owner = core.create_namespaced_config_map(namespace, _cm("fg"))
    core.create_namespaced_config_map(
        namespace,
        _cm(
            "blocker",
            ownerReferences=[_owner_ref(owner, blockOwnerDeletion=True)],
            finalizers=["example.com/slow"],
        ),
    )
    core.delete_namespaced_config_map("fg", namespace, propagation_policy="Foreground")
    held = core.read_namespaced_config_map("fg", namespace)
    assert "foregroundDeletion" in held.metadata.finalizers
    eventually_sync(
        lambda: (
            core.read_namespaced_config_map("blocker", namespace).metadata.deletion_timestamp
            is not None
        )
    )
    assert _exists(lambda: core.read_namespaced_config_map("fg", namespace))
    core.patch_namespaced_config_map("blocker", namespace, {"metadata": {"finalizers": None}})
    eventually_sync(lambda: not _exists(lambda: core.read_namespaced_config_map("fg", namespace)))


def test_orphan_deletion_keeps_dependents(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    owner = core.create_namespaced_config_map(namespace, _cm("op"))
    core.create_namespaced_config_map(namespace, _cm("kept", ownerReferences=[_owner_ref(owner)]))
    core.delete_namespaced_config_map("op", namespace, propagation_policy="Orphan")
    eventually_sync(lambda: not _exists(lambda: core.read_namespaced_config_map("op", namespace)))
    kept = core.read_namespaced_config_map("kept", namespace)
    assert not kept.metadata.owner_references


def test_delete_collection_by_label(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    for name, tier in (("a", "x"), ("b", "x"), ("c", "y")):
        core.create_namespaced_config_map(namespace, _cm(name, labels={"tier": tier}))
    core.delete_collection_namespaced_config_map(namespace, label_selector="tier=x")
    names = [c.metadata.name for c in core.list_namespaced_config_map(namespace).items]
    assert "c" in names
    assert "a" not in names
    assert "b" not in names


def test_namespace_deletion_removes_content(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map("doomed", _cm("c1"))
    core.create_namespaced_pod(
        "doomed",
        {
            "metadata": {"name": "p"},
            "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]},
        },
    )
    core.delete_namespace("doomed")
    assert core.read_namespace("doomed").status.phase == "Terminating"
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_config_map("doomed", _cm("late"))
    assert exc.value.status == 403
    assert "because it is being terminated" in exc.value.body
    eventually_sync(lambda: not _exists(lambda: core.read_namespaced_config_map("c1", "doomed")))
    # The pod is terminating gracefully: the namespace waits for the kubelet.
    assert core.read_namespaced_pod("p", "doomed").metadata.deletion_timestamp is not None
    assert _exists(lambda: core.read_namespace("doomed"))
    core.delete_namespaced_pod("p", "doomed", grace_period_seconds=0)
    eventually_sync(lambda: not _exists(lambda: core.read_namespace("doomed")))


def test_default_namespace_cannot_be_deleted(api_client: client.ApiClient) -> None:
    with pytest.raises(client.ApiException) as exc:
        client.CoreV1Api(api_client).delete_namespace("default")
    assert exc.value.status == 403


def test_crd_deletion_removes_objects_and_stops_serving(
    api_client: client.ApiClient, apiserver: object
) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    co = client.CustomObjectsApi(api_client)
    apiserver.install_crds([CRD_FIXTURES / "computedomain.yaml"])  # type: ignore[attr-defined]
    body = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "gone", "finalizers": ["example.com/x"]},
        "spec": {"channel": {"resourceClaimTemplate": {"name": "r"}}},
    }
    co.create_namespaced_custom_object(
        "resource.nvidia.com", "v1beta1", "default", "computedomains", body
    )
    ext.delete_custom_resource_definition("computedomains.resource.nvidia.com")
    crd = ext.read_custom_resource_definition("computedomains.resource.nvidia.com")
    assert crd.metadata.deletion_timestamp is not None
    co.patch_namespaced_custom_object(
        "resource.nvidia.com",
        "v1beta1",
        "default",
        "computedomains",
        "gone",
        {"metadata": {"finalizers": None}},
    )
    eventually_sync(
        lambda: (
            not _exists(
                lambda: ext.read_custom_resource_definition("computedomains.resource.nvidia.com")
            )
        )
    )
    with pytest.raises(client.ApiException) as exc:
        co.list_namespaced_custom_object(
            "resource.nvidia.com", "v1beta1", "default", "computedomains"
        )
    assert exc.value.status == 404


def test_a_dry_run_in_the_delete_options_body_deletes_nothing(
    api_client: client.ApiClient, namespace: str
) -> None:
    """kubectl delete --dry-run=server sends dryRun in the DeleteOptions body, not the query."""
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, _cm("kept"))
    core.delete_namespaced_config_map("kept", namespace, body={"dryRun": ["All"]})
    assert _exists(lambda: core.read_namespaced_config_map("kept", namespace))
    core.delete_collection_namespaced_config_map(namespace, body={"dryRun": ["All"]})
    assert _exists(lambda: core.read_namespaced_config_map("kept", namespace))
    with pytest.raises(client.ApiException) as exc:
        core.delete_namespaced_config_map("kept", namespace, body={"dryRun": ["Some"]})
    assert exc.value.status == 422
