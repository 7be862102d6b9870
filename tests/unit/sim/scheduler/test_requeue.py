"""Which pending pods a claim event reconsiders: the pods using the claim, or every pending pod
when devices are given back."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim.scheduler import requeue


def claim(*devices: str) -> dict[str, Any]:
    results = [{"driver": "d", "pool": "p", "device": name, "request": "r"} for name in devices]
    status = {"allocation": {"devices": {"results": results}}} if devices else {}
    return {"metadata": {"name": "c", "namespace": "ns"}, "status": status}


def test_a_pod_uses_its_named_and_its_recorded_template_claims() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "resourceClaims": [
                {"name": "a", "resourceClaimName": "shared"},
                {"name": "b", "resourceClaimTemplateName": "tmpl"},
                {"name": "c", "resourceClaimTemplateName": "not-yet"},
            ]
        },
        "status": {
            "resourceClaimStatuses": [
                {"name": "b", "resourceClaimName": "p-b-x1"},
                {"name": "c"},  # recorded without a claim: none needed
            ]
        },
    }
    assert requeue.claims_of_pod(pod) == ["ns/p-b-x1", "ns/shared"]


def test_a_pod_without_claims_uses_none() -> None:
    assert requeue.claims_of_pod({"metadata": {"name": "p", "namespace": "ns"}}) == []


@pytest.mark.parametrize(
    ("old", "new", "frees"),
    [
        (None, claim(), False),
        (None, claim("a"), False),
        (claim(), claim("a"), False),
        (claim("a"), claim("a"), False),
        (claim("a"), claim("a", "b"), False),
        (claim("a"), claim(), True),
        (claim("a", "b"), claim("b"), True),
        (claim("a"), None, True),
        (claim(), None, False),
    ],
    ids=[
        "created",
        "created-allocated",
        "allocated",
        "unchanged",
        "grown",
        "deallocated",
        "shrunk",
        "deleted-allocated",
        "deleted-unallocated",
    ],
)
def test_only_giving_devices_back_frees_them(
    old: dict[str, Any] | None, new: dict[str, Any] | None, frees: bool
) -> None:
    assert requeue.releases_devices(old, new) is frees
