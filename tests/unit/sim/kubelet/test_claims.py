"""Which claims a pod uses, when they may be prepared, and which CDI devices each container gets."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain_sim.kubelet.claims import (
    ClaimNotReady,
    PreparedDevice,
    cdi_ids_for_container,
    check_ready,
    pod_claims,
)

POD: dict[str, Any] = {
    "metadata": {"name": "w", "namespace": "ns", "uid": "pod-1"},
    "spec": {
        "resourceClaims": [
            {"name": "chan", "resourceClaimTemplateName": "tmpl"},
            {"name": "shared", "resourceClaimName": "big"},
        ]
    },
    "status": {"resourceClaimStatuses": [{"name": "chan", "resourceClaimName": "w-chan-abcde"}]},
}


def claim(
    uid: str, results: list[tuple[str, str, str]], reserved: list[str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": f"claim-{uid}", "uid": uid},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": r, "pool": p, "device": d, "driver": "x"} for r, p, d in results
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "uid": u} for u in (reserved or ["pod-1"])],
        },
    }


def test_pod_claims_direct_and_generated() -> None:
    assert [(c.pod_claim_name, c.claim_name) for c in pod_claims(POD)] == [
        ("chan", "w-chan-abcde"),
        ("shared", "big"),
    ]


def test_generated_claim_not_recorded_yet() -> None:
    with pytest.raises(ClaimNotReady, match="pod claim 'chan'"):
        pod_claims({**POD, "status": {}})


@pytest.mark.parametrize(
    ("found", "message"),
    [
        (None, "ResourceClaim ns/c does not exist"),
        ({"metadata": {}, "status": {}}, "is not allocated yet"),
        (claim("u", [("r", "n", "d")], reserved=["other"]), "is not reserved for pod w"),
    ],
    ids=["missing", "unallocated", "not reserved"],
)
def test_check_ready(found: dict[str, Any] | None, message: str) -> None:
    with pytest.raises(ClaimNotReady, match=message):
        check_ready(found, "c", POD)


def test_check_ready_accepts_a_reserved_claim() -> None:
    check_ready(claim("u", [("r", "n", "d")]), "c", POD)


def test_cdi_ids_follow_the_containers_claims_and_requests() -> None:
    claims = {
        "chan": claim("u1", [("channel", "n1", "channel-0")]),
        "shared": claim("u2", [("a", "n1", "dev-a"), ("b/sub", "n1", "dev-b")]),
    }
    prepared = {
        "u1": [PreparedDevice(("channel",), "n1", "channel-0", ("v/claim=u1-channel-0",))],
        "u2": [
            PreparedDevice(("a",), "n1", "dev-a", ("v/claim=a", "v/device=all")),
            PreparedDevice(("b",), "n1", "dev-b", ("v/claim=b", "v/device=all")),
        ],
    }
    every = {"name": "c", "resources": {"claims": [{"name": "chan"}, {"name": "shared"}]}}
    assert cdi_ids_for_container(every, claims, prepared) == [
        "v/claim=u1-channel-0",
        "v/claim=a",
        "v/device=all",
        "v/claim=b",
    ]
    only_b = {"name": "c", "resources": {"claims": [{"name": "shared", "request": "b"}]}}
    assert cdi_ids_for_container(only_b, claims, prepared) == ["v/claim=b", "v/device=all"]
    assert cdi_ids_for_container({"name": "plain"}, claims, prepared) == []


def test_cdi_ids_refuse_unknown_or_unprepared_claims() -> None:
    with pytest.raises(ClaimNotReady, match="unknown pod claim 'nope'"):
        cdi_ids_for_container({"name": "c", "resources": {"claims": [{"name": "nope"}]}}, {}, {})
    with pytest.raises(ClaimNotReady, match="is not prepared"):
        cdi_ids_for_container(
            {"name": "c", "resources": {"claims": [{"name": "chan"}]}},
            {"chan": claim("u1", [])},
            {},
        )
