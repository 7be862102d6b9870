"""``sim status`` text, and the installer's mapping from manifests to API resources."""

from __future__ import annotations

import pytest

from computedomain_sim.cluster import install, report


def test_status_tables() -> None:
    state = {
        "phase": "Ready",
        "pid": 7,
        "url": "http://127.0.0.1:1",
        "kubeconfig": "/s/kubeconfig",
        "isolation": "mountns",
    }
    seen = {
        "nodes": [
            {
                "metadata": {"name": "r0n0", "labels": {"computedomain.sim/rack": "r0"}},
                "status": {
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "addresses": [{"type": "InternalIP", "address": "127.9.0.1"}],
                },
            }
        ],
        "pods": [
            {
                "metadata": {"name": "computedomain-controller-x"},
                "spec": {"nodeName": "r0n0", "containers": [{"name": "c"}]},
                "status": {
                    "phase": "Running",
                    "podIP": "127.9.1.1",
                    "containerStatuses": [{"ready": True, "restartCount": 2}],
                },
            }
        ],
        "domains": [
            {
                "metadata": {"name": "cd", "namespace": "default"},
                "status": {"status": "Ready", "nodes": [{}, {}]},
            }
        ],
    }
    text = report.render(state, seen)
    assert "cluster: Ready  pid 7" in text
    assert "r0n0  Ready   127.9.0.1  r0" in text
    assert "computedomain-controller-x  r0n0  Running  1/1    2         127.9.1.1" in text
    assert "default/cd  Ready   2" in text


def test_empty_cluster_has_no_domains() -> None:
    text = report.render({}, {"nodes": [], "pods": [], "domains": []})
    assert text.rstrip().endswith("(none)")


def test_installer_maps_kinds_and_refuses_unknown_ones() -> None:
    resource = install.resource_of({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass"})
    assert (resource.group, resource.version, resource.plural, resource.namespaced) == (
        "resource.k8s.io",
        "v1",
        "deviceclasses",
        False,
    )
    with pytest.raises(install.InstallError, match="Frobnicator x: kind not known"):
        install.resource_of({"apiVersion": "v1", "kind": "Frobnicator", "metadata": {"name": "x"}})
