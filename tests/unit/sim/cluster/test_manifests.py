"""What deployments/ must say, checked on the rendered objects of every kustomization."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from computedomain.api import featuregates, imex, names
from computedomain_sim.cluster import kustomize

DEPLOYMENTS = Path(__file__).parents[4] / "deployments"
NAMESPACE = "computedomain-system"
IMAGE = "ghcr.io/computedomain/computedomain:0.1.0"
ALL = [
    "base",
    "overlays/sim",
    "overlays/leader-election",
    "overlays/gpu-operator",
    "overlays/host-managed",
]
HOST_MANAGED = "overlays/host-managed"


@functools.cache
def rendered(directory: str) -> tuple[dict[str, Any], ...]:
    return tuple(kustomize.render_builtin(DEPLOYMENTS / directory))


def find(directory: str, kind: str, name: str) -> dict[str, Any]:
    matches = [
        o for o in rendered(directory) if o["kind"] == kind and o["metadata"]["name"] == name
    ]
    assert len(matches) == 1, (kind, name)
    return matches[0]


def container(obj: dict[str, Any]) -> dict[str, Any]:
    (only,) = obj["spec"]["template"]["spec"]["containers"]
    return dict(only)


def env(obj: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(obj)["env"]}


def test_device_classes_carry_the_contract_selectors() -> None:
    for name, selector in [
        (names.DAEMON_DEVICE_CLASS, names.DAEMON_DEVICE_CLASS_SELECTOR),
        (names.CHANNEL_DEVICE_CLASS, names.CHANNEL_DEVICE_CLASS_SELECTOR),
    ]:
        device_class = find("base", "DeviceClass", name)
        assert device_class["spec"]["selectors"] == [{"cel": {"expression": selector}}]


@pytest.mark.parametrize("directory", ALL)
def test_admission_policy_names_the_service_account_the_plugin_runs_as(directory: str) -> None:
    plugin = find(directory, "DaemonSet", "computedomain-kubelet-plugin")
    account = plugin["spec"]["template"]["spec"]["serviceAccountName"]
    username = f"system:serviceaccount:{plugin['metadata']['namespace']}:{account}"
    policy = find(directory, "ValidatingAdmissionPolicy", "computedomain-resourceslices")
    (condition,) = policy["spec"]["matchConditions"]
    assert condition["expression"] == f"request.userInfo.username == '{username}'"
    binding = find(directory, "ValidatingAdmissionPolicyBinding", "computedomain-resourceslices")
    assert binding["spec"] == {
        "policyName": "computedomain-resourceslices",
        "validationActions": ["Deny"],
    }


@pytest.mark.parametrize("directory", ALL)
def test_every_service_account_used_or_bound_exists(directory: str) -> None:
    objects = rendered(directory)
    accounts = {
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in objects
        if o["kind"] == "ServiceAccount"
    }
    used = {
        (o["metadata"]["namespace"], o["spec"]["template"]["spec"]["serviceAccountName"])
        for o in objects
        if o["kind"] in ("Deployment", "DaemonSet")
    }
    bound = {
        (s["namespace"], s["name"])
        for o in objects
        if o["kind"] in ("RoleBinding", "ClusterRoleBinding")
        for s in o["subjects"]
    }
    assert used | bound <= accounts
    # The controller renders the daemons with this account; host-managed has no daemons.
    daemons = directory != HOST_MANAGED
    assert ((NAMESPACE, names.DAEMON_SERVICE_ACCOUNT) in accounts) is daemons
    roles = {
        (o["kind"], o["metadata"]["name"]) for o in objects if o["kind"] in ("Role", "ClusterRole")
    }
    refs = {
        (o["roleRef"]["kind"], o["roleRef"]["name"])
        for o in objects
        if o["kind"] in ("RoleBinding", "ClusterRoleBinding")
    }
    assert refs <= roles


@pytest.mark.parametrize("directory", ALL)
def test_one_image_everywhere_and_the_controller_knows_it(directory: str) -> None:
    workloads = [o for o in rendered(directory) if o["kind"] in ("Deployment", "DaemonSet")]
    assert {c["image"] for o in workloads for c in o["spec"]["template"]["spec"]["containers"]} == {
        IMAGE
    }
    assert env(find(directory, "Deployment", "computedomain-controller"))["IMAGE_NAME"] == IMAGE


def test_kubelet_plugin_is_privileged_with_host_directories_and_grpc_health() -> None:
    plugin = find("base", "DaemonSet", "computedomain-kubelet-plugin")
    spec = plugin["spec"]["template"]["spec"]
    c = container(plugin)
    assert c["securityContext"]["privileged"] is True
    assert c["command"][0] == "cd-kubelet-plugin"
    volumes = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    for name, path in [
        ("plugins", names.KUBELET_PLUGINS_DIR),
        ("plugins-registry", names.KUBELET_REGISTRAR_DIR),
        ("cdi", names.CDI_DEFAULT_ROOT),
    ]:
        assert volumes[name] == path
        assert mounts[name]["mountPath"] == path  # the kubelet dials the paths the plugin reports
    assert mounts["plugins"]["mountPropagation"] == "Bidirectional"
    port = int(env(plugin)["HEALTHCHECK_PORT"])
    for probe in ("startupProbe", "livenessProbe"):
        assert c[probe]["grpc"] == {"port": port, "service": "liveness"}
    assert env(plugin)["CDI_ROOT"] == names.CDI_DEFAULT_ROOT
    assert env(plugin)["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}


def test_controller_is_probed_and_not_root() -> None:
    controller = find("base", "Deployment", "computedomain-controller")
    c = container(controller)
    spec = controller["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    port = int(env(controller)["HTTP_ENDPOINT"].rpartition(":")[2])
    assert c["ports"] == [{"name": "http", "containerPort": port, "protocol": "TCP"}]
    assert env(controller)["LEADER_ELECTION_ENABLED"] == "false"
    assert controller["spec"]["replicas"] == 1


def test_daemons_may_reach_each_other_on_the_imex_ports() -> None:
    policy = find("base", "NetworkPolicy", "computedomain-daemons")
    selector = {"matchExpressions": [{"key": names.COMPUTE_DOMAIN_LABEL, "operator": "Exists"}]}
    assert policy["spec"]["podSelector"] == selector
    ports = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
    assert ports == {names.IMEX_SERVER_PORT, names.IMEX_CMD_PORT}
    assert policy["spec"]["ingress"][0]["from"] == [{"podSelector": selector}]


def test_leader_election_overlay() -> None:
    controller = find("overlays/leader-election", "Deployment", "computedomain-controller")
    assert controller["spec"]["replicas"] == 2
    values = env(controller)
    assert values["LEADER_ELECTION_ENABLED"] == "true"
    assert (values["LEADER_ELECTION_LEASE_DURATION"], values["LEADER_ELECTION_RENEW_DEADLINE"]) == (
        "15s",
        "10s",
    )


def test_gpu_operator_overlay_moves_the_driver_root() -> None:
    plugin = find("overlays/gpu-operator", "DaemonSet", "computedomain-kubelet-plugin")
    assert env(plugin)["NVIDIA_DRIVER_ROOT"] == "/run/nvidia/driver"
    volumes = {
        v["name"]: v["hostPath"]["path"] for v in plugin["spec"]["template"]["spec"]["volumes"]
    }
    assert volumes["driver-root"] == "/run/nvidia/driver"


def test_sim_overlay_binds_to_the_pod_ip_and_leaves_the_nvml_to_the_node() -> None:
    for kind, name in [
        ("Deployment", "computedomain-controller"),
        ("DaemonSet", "computedomain-kubelet-plugin"),
    ]:
        obj = find("overlays/sim", kind, name)
        ordered = [e["name"] for e in container(obj)["env"]]
        assert env(obj)["HTTP_ENDPOINT"].startswith("$(POD_IP):")
        assert ordered.index("POD_IP") < ordered.index("HTTP_ENDPOINT")  # $(POD_IP) resolves
    plugin = find("overlays/sim", "DaemonSet", "computedomain-kubelet-plugin")
    assert "NVML_BACKEND" not in env(plugin)  # the simulated node's environment chooses it
    assert env(plugin)["ALT_PROC_DEVICES_PATH"].startswith("/var/lib/cd-sim/")


def test_host_managed_overlay_switches_both_programs_and_drops_the_daemons() -> None:
    for kind, name in [
        ("Deployment", "computedomain-controller"),
        ("DaemonSet", "computedomain-kubelet-plugin"),
    ]:
        values = env(find(HOST_MANAGED, kind, name))
        features = featuregates.parse(values["FEATURE_GATES"])
        settings = imex.resolve(values["IMEX_MODE"], values["IMEX_ISOLATION"], features)
        assert settings.host_managed
        assert [e["name"] for e in container(find(HOST_MANAGED, kind, name))["env"]].count(
            "IMEX_MODE"
        ) == 1
    kept = {(o["kind"], o["metadata"]["name"]) for o in rendered(HOST_MANAGED)}
    dropped = {(o["kind"], o["metadata"]["name"]) for o in rendered("base")} - kept
    assert dropped == {
        ("DeviceClass", names.DAEMON_DEVICE_CLASS),
        ("ServiceAccount", names.DAEMON_SERVICE_ACCOUNT),
        ("ClusterRole", "compute-domain-daemon-role"),
        ("ClusterRoleBinding", "compute-domain-daemon-role-binding"),
    }
    role = find(HOST_MANAGED, "ClusterRole", "computedomain-kubelet-plugin")
    assert {"apiGroups": ["resource.nvidia.com"], "resources": ["computedomains"],
            "verbs": ["patch"]} in role["rules"]  # fmt: skip


def test_the_base_runs_driver_managed_imex() -> None:
    for kind, name in [
        ("Deployment", "computedomain-controller"),
        ("DaemonSet", "computedomain-kubelet-plugin"),
    ]:
        values = env(find("base", kind, name))
        settings = imex.resolve(values["IMEX_MODE"], values["IMEX_ISOLATION"], featuregates.parse())
        assert not settings.host_managed
    plugin = env(find("base", "DaemonSet", "computedomain-kubelet-plugin"))
    assert plugin["IMEX_HOST_SOCKET_PATH"] == imex.DEFAULT_HOST_SOCKET_PATH
