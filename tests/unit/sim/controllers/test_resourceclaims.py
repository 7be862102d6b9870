"""Claims from templates for pods, and releasing claims nobody uses."""

from __future__ import annotations

from typing import Any

from computedomain_sim.controllers import resourceclaims

TEMPLATE = {
    "metadata": {"name": "chan", "namespace": "ns"},
    "spec": {
        "metadata": {"labels": {"l": "v"}},
        "spec": {
            "devices": {"requests": [{"name": "channel", "exactly": {"deviceClassName": "c"}}]}
        },
    },
}


def pod(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "w0", "namespace": "ns", "uid": "pod-uid"},
        "spec": {
            "resourceClaims": [
                {"name": "cd", "resourceClaimTemplateName": "chan"},
                {"name": "direct", "resourceClaimName": "shared"},
            ]
        },
        "status": status,
    }


def test_claim_from_template_named_and_owned_like_kubernetes() -> None:
    out = resourceclaims.claims_for_pod(pod(), {"chan": TEMPLATE}, [], {"cd": "x7kq2"})
    (claim,) = out.creates
    assert claim["metadata"]["name"] == "w0-cd-x7kq2"
    assert claim["metadata"]["namespace"] == "ns"
    assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/pod-claim-name": "cd"}
    assert claim["metadata"]["labels"] == {"l": "v"}
    assert claim["metadata"]["ownerReferences"][0] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "w0",
        "uid": "pod-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert claim["spec"] == TEMPLATE["spec"]["spec"]
    assert out.statuses == (("cd", "w0-cd-x7kq2"),)


def test_recorded_claim_is_not_made_twice() -> None:
    recorded = pod(resourceClaimStatuses=[{"name": "cd", "resourceClaimName": "w0-cd-aaaaa"}])
    out = resourceclaims.claims_for_pod(recorded, {"chan": TEMPLATE}, [], {"cd": "bbbbb"})
    assert out.creates == ()
    assert out.statuses == (("cd", "w0-cd-aaaaa"),)


def test_existing_owned_claim_is_adopted_after_a_lost_status_write() -> None:
    existing = resourceclaims.claims_for_pod(
        pod(), {"chan": TEMPLATE}, [], {"cd": "aaaaa"}
    ).creates[0]
    out = resourceclaims.claims_for_pod(pod(), {"chan": TEMPLATE}, [existing], {"cd": "bbbbb"})
    assert out.creates == ()
    assert out.statuses == (("cd", "w0-cd-aaaaa"),)


def test_missing_template_is_reported() -> None:
    out = resourceclaims.claims_for_pod(pod(), {}, [], {"cd": "aaaaa"})
    assert out.creates == ()
    assert out.missing_templates == ("chan",)


def test_long_names_are_truncated_before_the_suffix() -> None:
    long_pod = pod()
    long_pod["metadata"]["name"] = "p" * 70
    out = resourceclaims.claims_for_pod(long_pod, {"chan": TEMPLATE}, [], {"cd": "aaaaa"})
    assert len(out.creates[0]["metadata"]["name"]) == 63
    assert out.creates[0]["metadata"]["name"].endswith("aaaaa")


def claim(reserved: list[str], *, allocated: bool = True, deleting: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if allocated:
        status["allocation"] = {"devices": {"results": []}}
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": u, "uid": u} for u in reserved]
    meta: dict[str, Any] = {"finalizers": [resourceclaims.PROTECTION_FINALIZER]}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-02T08:00:00Z"
    return {"metadata": meta, "status": status}


def test_release_keeps_live_users() -> None:
    assert resourceclaims.release(claim(["a"]), {"a": {"status": {"phase": "Running"}}}) is None


def test_release_drops_gone_pods_and_deallocates() -> None:
    out = resourceclaims.release(claim(["a", "b"]), {"a": {"status": {"phase": "Running"}}})
    assert out is not None
    assert out.status["reservedFor"] == [{"resource": "pods", "name": "a", "uid": "a"}]
    assert "allocation" in out.status
    assert not out.remove_finalizer
    last = resourceclaims.release(claim(["a"]), {"a": {"status": {"phase": "Succeeded"}}})
    assert last is not None
    assert last.status == {}
    assert last.remove_finalizer


def test_a_claim_nobody_reserved_yet_keeps_its_finalizer_and_allocation() -> None:
    # The scheduler puts its finalizer on first, then writes the allocation and reservedFor.
    assert resourceclaims.release(claim([], allocated=False), {}) is None
    assert resourceclaims.release(claim([], allocated=True), {}) is None


def test_a_deleted_claim_nobody_uses_is_deallocated_and_loses_the_finalizer() -> None:
    for allocated in (True, False):
        out = resourceclaims.release(claim([], allocated=allocated, deleting=True), {})
        assert out is not None
        assert out.status == {}
        assert out.remove_finalizer
    live = {"a": {"status": {"phase": "Running"}}}
    assert resourceclaims.release(claim(["a"], deleting=True), live) is None  # still in use
