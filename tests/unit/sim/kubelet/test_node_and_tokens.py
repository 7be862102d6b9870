"""The Node a simulated kubelet registers, and the kubeconfig it gives a pod."""

from __future__ import annotations

import yaml

from computedomain_sim.kubelet.node import NodeConfig, node_object
from computedomain_sim.kubelet.tokens import kubeconfig_text


def test_node_object_carries_identity_labels_taints_and_boot_id() -> None:
    config = NodeConfig(
        name="r1n0",
        address="127.9.0.3",
        labels={"nvidia.com/gpu.present": "true"},
        taints=({"key": "nvidia.com/gpu", "effect": "NoSchedule"},),
    )
    node = node_object(config, "boot-1", "t0")
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "r1n0"
    assert node["metadata"]["labels"]["nvidia.com/gpu.present"] == "true"
    assert node["spec"]["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert node["status"]["nodeInfo"]["bootID"] == "boot-1"
    assert node["status"]["addresses"][0] == {"type": "InternalIP", "address": "127.9.0.3"}
    (ready,) = node["status"]["conditions"]
    assert (ready["type"], ready["status"]) == ("Ready", "True")
    assert (
        node_object(config, "b", "t", ready=False)["status"]["conditions"][0]["status"] == "False"
    )


def test_pod_kubeconfig() -> None:
    config = yaml.safe_load(kubeconfig_text("http://127.0.0.1:6443", "tok", "computedomain-system"))
    assert config["clusters"][0]["cluster"]["server"] == "http://127.0.0.1:6443"
    assert config["users"][0]["user"]["token"] == "tok"
    assert config["contexts"][0]["context"]["namespace"] == "computedomain-system"
    assert config["current-context"] == "sim"
