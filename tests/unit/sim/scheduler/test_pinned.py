"""Narrowing the search to one node: which pods name their node, and which Node changes can
change where a pod fits."""

from __future__ import annotations

from typing import Any

from computedomain_sim.controllers import daemonset
from computedomain_sim.scheduler import placement


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def test_a_daemonset_pod_is_pinned_to_its_node() -> None:
    ds = {
        "metadata": {"name": "d", "namespace": "ns", "uid": "u"},
        "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}},
    }
    pod = daemonset.pod_for_node(ds, "r3n7", "d-x")
    assert placement.pinned_node(pod) == "r3n7"
    assert placement.fit_reason(pod, _node("r3n7")) is None


def test_a_hostname_selector_pins_and_other_pods_are_not_pinned() -> None:
    assert placement.pinned_node({"spec": {"nodeSelector": {"kubernetes.io/hostname": "a"}}}) == (
        "a"
    )
    assert placement.pinned_node({"spec": {"nodeSelector": {"rack": "r1"}}}) is None
    two = {
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": ["a", "b"]}
                                ]
                            }
                        ]
                    }
                }
            }
        }
    }
    assert placement.pinned_node(two) is None


def test_a_heartbeat_does_not_change_where_pods_fit() -> None:
    before = _node("a")
    beat = _node("a")
    beat["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:00:10Z"
    assert not placement.fit_view_changed(before, beat)
    labelled = _node("a", **{"resource.nvidia.com/computeDomain": "uid"})
    assert placement.fit_view_changed(before, labelled)
    not_ready = _node("a")
    not_ready["status"]["conditions"][0]["status"] = "False"
    assert placement.fit_view_changed(before, not_ready)
