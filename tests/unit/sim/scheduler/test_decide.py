"""The scheduler's decision for one pod: filters, claims, spreading, and the message."""

from __future__ import annotations

from typing import Any

from computedomain.api import names
from computedomain_sim.scheduler.allocation import allocated_devices
from computedomain_sim.scheduler.scheduler import RESOURCECLAIM_NOT_AVAILABLE, _claim_keys, decide

DRIVER = names.DRIVER_NAME
ANY_CHANNEL = {
    "metadata": {"name": "c"},
    "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
}


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def slice_(node_name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": node_name},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "channel-0", "attributes": {}}],
        },
    }


def claim(allocated_on: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "metadata": {"name": "cl", "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}},
    }
    if allocated_on:
        out["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "driver": DRIVER,
                            "pool": allocated_on,
                            "device": "channel-0",
                            "request": "r",
                        }
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [allocated_on]}
                            ]
                        }
                    ]
                },
            }
        }
    return out


POD = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {}}
NODES = [node("n1"), node("n2")]
NONE_TAKEN: frozenset[Any] = frozenset()  # no device held by another claim


def test_fewest_pods_wins_then_name() -> None:
    first = decide(
        POD, NODES, claims={}, other_taken=NONE_TAKEN, slices=[], classes={}, pods_per_node={}
    )
    assert first.node == "n1"
    busy = {"n1": 3, "n2": 1}
    assert (
        decide(
            POD, NODES, claims={}, other_taken=NONE_TAKEN, slices=[], classes={}, pods_per_node=busy
        ).node
        == "n2"
    )


def test_claims_are_allocated_on_the_chosen_node() -> None:
    out = decide(
        POD,
        NODES,
        claims={"ns/cl": claim()},
        other_taken=NONE_TAKEN,
        slices=[slice_("n2")],
        classes={"c": ANY_CHANNEL},
        pods_per_node={},
    )
    assert out.node == "n2"
    assert out.allocations["ns/cl"]["devices"]["results"][0]["pool"] == "n2"


def test_devices_taken_by_other_claims_are_skipped() -> None:
    out = decide(
        POD,
        NODES,
        claims={"ns/cl": claim()},
        other_taken=allocated_devices([claim(allocated_on="n1")]),
        slices=[slice_("n1"), slice_("n2")],
        classes={"c": ANY_CHANNEL},
        pods_per_node={},
    )
    assert out.node == "n2"


def test_an_allocated_claim_pins_the_pod_to_its_node() -> None:
    out = decide(
        POD,
        NODES,
        claims={"ns/cl": claim(allocated_on="n2")},
        other_taken=NONE_TAKEN,
        slices=[],
        classes={},
        pods_per_node={},
    )
    assert out.node == "n2"
    assert out.allocations == {}


def test_nothing_fits_gives_the_counted_reasons() -> None:
    out = decide(
        {**POD, "spec": {"nodeSelector": {"rack": "r1"}}},
        [node("n1"), node("n2", rack="r1"), node("n3", rack="r1")],
        claims={"ns/cl": claim(allocated_on="n1")},
        other_taken=NONE_TAKEN,
        slices=[],
        classes={},
        pods_per_node={},
    )
    assert out.node is None
    assert out.message == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        f"2 {RESOURCECLAIM_NOT_AVAILABLE}."
    )


def test_claim_keys_wait_for_generated_claims() -> None:
    pod = {
        "metadata": {"namespace": "ns"},
        "spec": {
            "resourceClaims": [
                {"name": "a", "resourceClaimTemplateName": "t"},
                {"name": "b", "resourceClaimName": "direct"},
            ]
        },
    }
    assert _claim_keys(pod) is None
    pod["status"] = {"resourceClaimStatuses": [{"name": "a", "resourceClaimName": "p-a-xxxxx"}]}
    assert _claim_keys(pod) == ["ns/p-a-xxxxx", "ns/direct"]
