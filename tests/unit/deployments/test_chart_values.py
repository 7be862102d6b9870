"""Every value of the chart changes what it says it changes: ``helm template`` with one value
changed, and the rendered objects read back field by field. A value without a case here fails
:func:`test_every_value_has_a_case`. Settings the programs parse (feature gates, the daemons'
resources and environment) are read back with the programs' own parsers."""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from computedomain.api import featuregates, imex
from computedomain.controller import settingvalues

from .chart import CHART, Key, Obj, container, env, helm, pod, render, values_file

Objects = dict[Key, Obj]
Check = Callable[[Objects], None]
CONTROLLER = ("Deployment", "computedomain-controller")
PLUGIN = ("DaemonSet", "computedomain-kubelet-plugin")
DEFAULTS: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())


def nested(path: str, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    here = out
    *parents, last = path.split(".")
    for part in parents:
        here = here.setdefault(part, {})
    here[last] = value
    return out


def merged(*trees: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tree in trees:
        for key, value in tree.items():
            if isinstance(value, Mapping) and isinstance(out.get(key), dict):
                out[key] = merged(out[key], value)
            else:
                out[key] = value
    return out


def helm_merged(path: str, value: Any) -> Any:
    """What Helm makes of ``value`` at ``path``: mappings merge into the default's keys."""
    default: Any = DEFAULTS
    for part in path.split("."):
        default = default[part]
    return merged(default, value) if isinstance(value, Mapping) else value


def ctl(objects: Objects) -> Obj:
    return objects[CONTROLLER]


def plg(objects: Objects) -> Obj:
    return objects[PLUGIN]


def namespaced(objects: Objects) -> Iterator[Obj]:
    return (o for o in objects.values() if "namespace" in o["metadata"])


def check_namespace(o: Objects) -> None:
    assert ("Namespace", "gpu-system") in o
    assert {x["metadata"]["namespace"] for x in namespaced(o)} == {"gpu-system"}
    subjects = [s for x in o.values() for s in x.get("subjects", [])]
    assert subjects
    assert {s["namespace"] for s in subjects} == {"gpu-system"}
    (condition,) = o[("ValidatingAdmissionPolicy", "computedomain-resourceslices")]["spec"][
        "matchConditions"
    ]
    account = "system:serviceaccount:gpu-system:computedomain-kubelet-plugin"
    assert condition["expression"] == f"request.userInfo.username == '{account}'"


def both(check: Callable[[Obj], None]) -> Check:
    def run(o: Objects) -> None:
        check(ctl(o))
        check(plg(o))

    return run


def check_image(image: str) -> Check:
    def run(o: Objects) -> None:
        both(lambda w: _eq(container(w)["image"], image))(o)
        assert env(ctl(o))["IMAGE_NAME"] == image

    return run


def _eq(a: object, b: object) -> None:
    assert a == b


def check_driver_root(o: Objects) -> None:
    assert env(plg(o))["NVIDIA_DRIVER_ROOT"] == "/run/nvidia/driver"
    volumes = {v["name"]: v for v in pod(plg(o))["volumes"]}
    assert volumes["driver-root"]["hostPath"] == {
        "path": "/run/nvidia/driver",
        "type": "DirectoryOrCreate",
    }


def check_election(**expected: str) -> Check:
    def run(o: Objects) -> None:
        e = env(ctl(o))
        assert e["LEADER_ELECTION_ENABLED"] == "true"
        got = {k: e[f"LEADER_ELECTION_{k.upper()}"] for k in expected}
        assert got == expected

    return run


def check_controller_endpoint(o: Objects) -> None:
    assert env(ctl(o))["HTTP_ENDPOINT"] == ":9090"
    (port,) = container(ctl(o))["ports"]
    assert port == {"name": "http", "containerPort": 9090, "protocol": "TCP"}
    (rule,) = o[("NetworkPolicy", "computedomain-controller")]["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 9090}]


def check_plugin_endpoint(o: Objects) -> None:
    assert env(plg(o))["HTTP_ENDPOINT"] == "10.0.0.1:9091"
    assert container(plg(o))["ports"][0] == {
        "name": "metrics", "containerPort": 9091, "protocol": "TCP",
    }  # fmt: skip
    (rule,) = o[("NetworkPolicy", "computedomain-kubelet-plugin")]["spec"]["ingress"]
    assert rule["ports"][0] == {"protocol": "TCP", "port": 9091}


def check_kubelet_dir(variable: str, volume: str, path: str) -> Check:
    def run(o: Objects) -> None:
        assert env(plg(o))[variable] == path
        mounts = {m["name"]: m["mountPath"] for m in container(plg(o))["volumeMounts"]}
        assert mounts[volume] == path
        volumes = {v["name"]: v["hostPath"]["path"] for v in pod(plg(o))["volumes"]}
        assert volumes[volume] == path

    return run


def check_no_probes(o: Objects) -> None:
    plugin = container(plg(o))
    assert env(plg(o))["HEALTHCHECK_PORT"] == "-1"
    assert "startupProbe" not in plugin
    assert "livenessProbe" not in plugin
    assert [p["name"] for p in plugin["ports"]] == ["metrics"]
    (rule,) = o[("NetworkPolicy", "computedomain-kubelet-plugin")]["spec"]["ingress"]
    assert [p["port"] for p in rule["ports"]] == [8081]


def check_clique_label(o: Objects) -> None:
    assert env(plg(o))["GPU_CLIQUE_LABEL_ENABLED"] == "true"
    rules = o[("ClusterRole", "computedomain-kubelet-plugin")]["rules"]
    assert [r["verbs"] for r in rules if r["resources"] == ["nodes"]] == [
        ["get", "list", "watch", "update", "patch"]
    ]


def check_health_port(o: Objects) -> None:
    plugin = container(plg(o))
    assert env(plg(o))["HEALTHCHECK_PORT"] == "6000"
    assert plugin["startupProbe"]["grpc"]["port"] == plugin["livenessProbe"]["grpc"]["port"] == 6000
    assert plugin["ports"][1]["containerPort"] == 6000
    (rule,) = o[("NetworkPolicy", "computedomain-kubelet-plugin")]["spec"]["ingress"]
    assert [p["port"] for p in rule["ports"]] == [8081, 6000]


def check_policy_env(expected: dict[str, str]) -> Check:
    def run(o: Objects) -> None:
        parsed = settingvalues.parse_policy_env(env(ctl(o))["CD_DAEMON_POLICY_ENV"])
        assert dict(parsed) == expected

    return run


def check_no_policy(name: str) -> Check:
    def run(o: Objects) -> None:
        policies = {k[1] for k in o if k[0] == "NetworkPolicy"}
        others = {"computedomain-controller", "computedomain-kubelet-plugin"}
        others |= {"computedomain-daemons"}
        assert policies == others - {name}

    return run


def pod_field(workload: Key, field: str, expected: Any) -> Check:
    return lambda o: _eq(pod(o[workload]).get(field), expected)


def container_field(workload: Key, field: str, expected: Any) -> Check:
    return lambda o: _eq(container(o[workload]).get(field), expected)


def env_var(workload: Key, name: str, expected: Any) -> Check:
    return lambda o: _eq(env(o[workload]).get(name), expected)


def pod_annotations(workload: Key, expected: Any) -> Check:
    return lambda o: _eq(o[workload]["spec"]["template"]["metadata"].get("annotations"), expected)


def env_tail(workload: Key, expected: list[Obj]) -> Check:
    return lambda o: _eq(container(o[workload])["env"][-len(expected) :], expected)


AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}
            ]
        }
    }
}
TOLERATIONS = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
VOLUME = {"name": "extra", "hostPath": {"path": "/opt/extra", "type": "Directory"}}
MOUNT = {"name": "extra", "mountPath": "/opt/extra", "readOnly": True}
EXTRA_ENV = [{"name": "KUBE_API_QPS", "value": "20"}]
GATES = {"ComputeDomainCliques": False, "IMEXDaemonsWithDNSNames": True}
ELECTION = {"controller": {"leaderElection": {"enabled": True}}}
RESOURCES = {"requests": {"cpu": "100m"}, "limits": {"memory": "256Mi"}}


def check_gates(o: Objects) -> None:
    for workload in (ctl(o), plg(o)):
        assert featuregates.parse_overrides(env(workload)["FEATURE_GATES"]) == GATES


def check_pull_secrets(o: Objects) -> None:
    both(lambda w: _eq(pod(w)["imagePullSecrets"], [{"name": "a"}, {"name": "b"}]))(o)
    names = env(ctl(o))["CD_DAEMON_IMAGE_PULL_SECRET_NAMES"]
    assert settingvalues.parse_pull_secrets(names) == ("a", "b")


def check_verbosity(o: Objects) -> None:
    assert env(plg(o))["LOG_VERBOSITY"] == "6"
    assert env(ctl(o))["LOG_VERBOSITY"] == env(ctl(o))["LOG_VERBOSITY_CD_DAEMON"] == "6"


def check_daemon_resources(o: Objects) -> None:
    assert settingvalues.parse_resources(env(ctl(o))["CD_DAEMON_RESOURCES"]) == RESOURCES


HOST_GATE = {"featureGates": {"HostManagedIMEXDaemon": True}}
DAEMON_OBJECTS = [
    ("DeviceClass", "compute-domain-daemon.nvidia.com"),
    ("ServiceAccount", "compute-domain-daemon-service-account"),
    ("ClusterRole", "compute-domain-daemon-role"),
    ("ClusterRoleBinding", "compute-domain-daemon-role-binding"),
]


def check_host_managed(o: Objects) -> None:
    """Both programs read hostManaged (with their own parser and gates); nothing of the
    daemons is installed; the plugin may patch ComputeDomains."""
    for workload in (ctl(o), plg(o)):
        e = env(workload)
        features = featuregates.parse(e["FEATURE_GATES"])
        assert imex.resolve(e["IMEX_MODE"], e["IMEX_ISOLATION"], features).host_managed
    assert [k for k in DAEMON_OBJECTS if k in o] == []
    assert ("DeviceClass", "compute-domain-default-channel.nvidia.com") in o
    rules = o[("ClusterRole", "computedomain-kubelet-plugin")]["rules"]
    assert rules[-1] == {
        "apiGroups": ["resource.nvidia.com"], "resources": ["computedomains"], "verbs": ["patch"],
    }  # fmt: skip


def check_empty_isolation(o: Objects) -> None:
    for workload in (ctl(o), plg(o)):
        assert env(workload)["IMEX_ISOLATION"] == ""
        assert imex.parse_isolation(env(workload)["IMEX_ISOLATION"]) is imex.Isolation.DOMAIN


def check_socket_path(o: Objects) -> None:
    assert env(plg(o))["IMEX_HOST_SOCKET_PATH"] == "/run/imex/ctl.sock"
    assert "IMEX_HOST_SOCKET_PATH" not in env(ctl(o))


def merged_at(workload: Key, field: str, path: str, value: Any, *, pod_level: bool) -> Check:
    """The field holds ``value`` merged into the default at ``path``, as Helm merges maps."""
    expected = helm_merged(path, value)
    if pod_level:
        return pod_field(workload, field, expected)
    return container_field(workload, field, expected)


def case(value: Any, check: Check, needs: dict[str, Any] | None = None) -> Case:
    return (value, needs or {}, check)


Case = tuple[Any, dict[str, Any], Check]
C, P = CONTROLLER, PLUGIN
CC = "controller.containers.computeDomain"
PC = "kubeletPlugin.containers.computeDomains"
HIGH = "high"

# value path -> (the value, extra values it needs, what the render must show)
CASES: dict[str, Case] = {
    "namespace.name": case("gpu-system", check_namespace),
    "namespace.create": case(False, lambda o: _eq([k for k in o if k[0] == "Namespace"], [])),
    "image.repository": case("example.org/cd", check_image("example.org/cd:0.1.0")),
    "image.tag": case("9.9.9", check_image("ghcr.io/computedomain/computedomain:9.9.9")),
    "image.pullPolicy": case(
        "Always", both(lambda w: _eq(container(w)["imagePullPolicy"], "Always"))
    ),
    "imagePullSecrets": case([{"name": "a"}, {"name": "b"}], check_pull_secrets),
    "logVerbosity": case("6", check_verbosity),
    "featureGates": case(GATES, check_gates),
    "nvidiaDriverRoot": case("/run/nvidia/driver", check_driver_root),
    "resources.computeDomains.imex.mode": case("hostManaged", check_host_managed, HOST_GATE),
    "resources.computeDomains.imex.isolation": case("", check_empty_isolation),
    "resources.computeDomains.imex.hostSocketPath": case("/run/imex/ctl.sock", check_socket_path),
    "nvidiaCDIHookPath": case("/opt/hook", env_var(P, "NVIDIA_CDI_HOOK_PATH", "/opt/hook")),
    "nvidiaCTKPath": case("/opt/ctk", env_var(P, "NVIDIA_CTK_PATH", "/opt/ctk")),
    "controller.replicas": case(3, lambda o: _eq(ctl(o)["spec"]["replicas"], 3)),
    "controller.leaderElection.enabled": case(
        True, check_election(lease_duration="15s", renew_deadline="10s", retry_period="2s")
    ),
    "controller.leaderElection.leaseDuration": case(
        "30s", check_election(lease_duration="30s"), ELECTION
    ),
    "controller.leaderElection.renewDeadline": case(
        "20s", check_election(renew_deadline="20s"), ELECTION
    ),
    "controller.leaderElection.retryPeriod": case(
        "5s", check_election(retry_period="5s"), ELECTION
    ),
    "controller.metrics.enabled": case(
        False,
        lambda o: _eq((env(ctl(o))["METRICS_PATH"], env(ctl(o))["HTTP_ENDPOINT"]), ("", ":8080")),
    ),
    "controller.metrics.httpEndpoint": case(":9090", check_controller_endpoint),
    "controller.metrics.metricsPath": case("/m", env_var(C, "METRICS_PATH", "/m")),
    "controller.priorityClassName": case(HIGH, pod_field(C, "priorityClassName", HIGH)),
    "controller.podAnnotations": case({"a": "b"}, pod_annotations(C, {"a": "b"})),
    "controller.podSecurityContext": case(
        {"runAsUser": 1000},
        merged_at(
            C,
            "securityContext",
            "controller.podSecurityContext",
            {"runAsUser": 1000},
            pod_level=True,
        ),
    ),
    "controller.nodeSelector": case({"role": "c"}, pod_field(C, "nodeSelector", {"role": "c"})),
    "controller.tolerations": case(TOLERATIONS, pod_field(C, "tolerations", TOLERATIONS)),
    "controller.affinity": case(AFFINITY, pod_field(C, "affinity", AFFINITY)),
    f"{CC}.securityContext": case(
        {"privileged": False},
        merged_at(
            C, "securityContext", f"{CC}.securityContext", {"privileged": False}, pod_level=False
        ),
    ),
    f"{CC}.env": case(EXTRA_ENV, env_tail(C, EXTRA_ENV)),
    f"{CC}.resources": case(
        RESOURCES, merged_at(C, "resources", f"{CC}.resources", RESOURCES, pod_level=False)
    ),
    "controller.networkPolicy.enabled": case(False, check_no_policy("computedomain-controller")),
    "kubeletPlugin.metrics.enabled": case(False, env_var(P, "METRICS_PATH", "")),
    "kubeletPlugin.metrics.computeDomainHttpEndpoint": case("10.0.0.1:9091", check_plugin_endpoint),
    "kubeletPlugin.metrics.metricsPath": case("/m", env_var(P, "METRICS_PATH", "/m")),
    "kubeletPlugin.priorityClassName": case(HIGH, pod_field(P, "priorityClassName", HIGH)),
    "kubeletPlugin.updateStrategy": case(
        {"type": "OnDelete", "rollingUpdate": None},
        lambda o: _eq(plg(o)["spec"]["updateStrategy"], {"type": "OnDelete"}),
    ),
    "kubeletPlugin.podAnnotations": case({"a": "b"}, pod_annotations(P, {"a": "b"})),
    "kubeletPlugin.podSecurityContext": case(
        {"fsGroup": 7}, pod_field(P, "securityContext", {"fsGroup": 7})
    ),
    "kubeletPlugin.nodeSelector": case(
        {"gpu": "on-node"}, pod_field(P, "nodeSelector", {"gpu": "on-node"})
    ),
    "kubeletPlugin.tolerations": case(TOLERATIONS, pod_field(P, "tolerations", TOLERATIONS)),
    "kubeletPlugin.affinity": case(AFFINITY, pod_field(P, "affinity", AFFINITY)),
    "kubeletPlugin.kubeletRegistrarDirectoryPath": case(
        "/k/reg",
        check_kubelet_dir("KUBELET_REGISTRAR_DIRECTORY_PATH", "plugins-registry", "/k/reg"),
    ),
    "kubeletPlugin.kubeletPluginsDirectoryPath": case(
        "/k/plugins", check_kubelet_dir("KUBELET_PLUGINS_DIRECTORY_PATH", "plugins", "/k/plugins")
    ),
    "kubeletPlugin.extraVolumes": case([VOLUME], lambda o: _eq(pod(plg(o))["volumes"][-1], VOLUME)),
    f"{PC}.securityContext": case(
        {"privileged": False}, container_field(P, "securityContext", {"privileged": False})
    ),
    f"{PC}.env": case(EXTRA_ENV, env_tail(P, EXTRA_ENV)),
    f"{PC}.extraVolumeMounts": case(
        [MOUNT], lambda o: _eq(container(plg(o))["volumeMounts"][-1], MOUNT)
    ),
    f"{PC}.resources": case(
        RESOURCES, merged_at(P, "resources", f"{PC}.resources", RESOURCES, pod_level=False)
    ),
    f"{PC}.gpuCliqueLabelEnabled": case(True, check_clique_label),
    f"{PC}.healthcheckPort": case(6000, check_health_port),
    "kubeletPlugin.networkPolicy.enabled": case(
        False, check_no_policy("computedomain-kubelet-plugin")
    ),
    "daemon.priorityClassName": case(HIGH, env_var(C, "CD_DAEMON_PRIORITY_CLASS_NAME", HIGH)),
    "daemon.resources": case(RESOURCES, check_daemon_resources),
    "daemon.env": case(
        {"CD_DNS_SUFFIX": "imex.example.com"},
        check_policy_env({"CD_DNS_SUFFIX": "imex.example.com"}),
    ),
    "daemon.imexBinary": case(
        "/usr/bin/nvidia-imex", check_policy_env({"IMEX_BINARY": "/usr/bin/nvidia-imex"})
    ),
    "daemon.imexCtlBinary": case(
        "/usr/bin/nvidia-imex-ctl",
        check_policy_env({"IMEX_CTL_BINARY": "/usr/bin/nvidia-imex-ctl"}),
    ),
    "daemon.networkPolicy.enabled": case(False, check_no_policy("computedomain-daemons")),
}


@functools.cache
def rendered_with(values: str) -> Objects:
    """The render with ``values`` (JSON, so that it caches), shared by the cases."""
    with tempfile.TemporaryDirectory() as tmp:
        return render(f"--values={values_file(Path(tmp), json.loads(values))}")


def leaves(tree: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """The value paths: a case's path is one value, even when it holds a mapping."""
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and path not in CASES:
            yield from leaves(value, f"{path}.")
        else:
            yield path


def test_every_value_has_a_case() -> None:
    assert sorted(leaves(DEFAULTS)) == sorted(CASES)


@pytest.mark.parametrize("path", sorted(CASES))
def test_a_changed_value_changes_its_fields(path: str, tmp_path: Path) -> None:
    value, needs, check = CASES[path]
    default = rendered_with(json.dumps(needs))
    changed = render(f"--values={values_file(tmp_path, merged(needs, nested(path, value)))}")
    assert changed != default, f"{path}={value!r} renders what the default renders"
    check(changed)


def test_the_default_controller_passes_nothing_extra_to_the_daemons() -> None:
    controller_env = env(render()[CONTROLLER])
    for name in ("CD_DAEMON_POLICY_ENV", "CD_DAEMON_RESOURCES", "CD_DAEMON_PRIORITY_CLASS_NAME",
                 "CD_DAEMON_IMAGE_PULL_SECRET_NAMES", "FEATURE_GATES"):  # fmt: skip
        assert name not in controller_env


def test_daemon_env_and_imex_paths_combine_into_one_json_object(tmp_path: Path) -> None:
    values = {"daemon": {"env": {"A": "1,2"}, "imexBinary": "/x/nvidia-imex"}}
    text = env(render(f"--values={values_file(tmp_path, values)}")[CONTROLLER])[
        "CD_DAEMON_POLICY_ENV"
    ]
    assert json.loads(text) == {"A": "1,2", "IMEX_BINARY": "/x/nvidia-imex"}
    parsed = settingvalues.parse_policy_env(text)
    assert dict(parsed) == {"A": "1,2", "IMEX_BINARY": "/x/nvidia-imex"}


def test_an_endpoint_without_a_port_fails_the_render_naming_it(tmp_path: Path) -> None:
    values = values_file(tmp_path, {"controller": {"metrics": {"httpEndpoint": "localhost"}}})
    result = helm("template", "x", str(CHART), f"--values={values}", check=False)
    assert result.returncode != 0
    assert "httpEndpoint" in result.stderr
