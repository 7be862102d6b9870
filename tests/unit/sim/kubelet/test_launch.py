"""Container launch specs: env layers, downward API, command mapping, mounts, both isolation
modes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from computedomain_sim.kubelet import cdi
from computedomain_sim.kubelet.launch import (
    SERVICE_ACCOUNT_DIR,
    BindMount,
    Image,
    InCluster,
    Isolation,
    LaunchError,
    PodContext,
    build,
    hosts_file,
    volume_sources,
)
from computedomain_sim.kubelet.paths import NodePaths

ROOT = Path("/tmp/cds-test/n0")
PATHS = NodePaths(ROOT)
IMAGE = Image(
    commands={"cd-kubelet-plugin": "/venv/bin/cd-kubelet-plugin"},
    env={"PATH": "/venv/bin:/usr/bin"},
)

PLUGIN_POD: dict[str, Any] = {
    "metadata": {
        "name": "plugin-x",
        "namespace": "cd-system",
        "uid": "pod-uid",
        "labels": {"app": "p"},
    },
    "spec": {
        "serviceAccountName": "computedomain-kubelet-plugin",
        "volumes": [
            {"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/plugins"}},
            {"name": "cdi", "hostPath": {"path": "/var/run/cdi"}},
            {"name": "scratch", "emptyDir": {}},
        ],
    },
}
PLUGIN: dict[str, Any] = {
    "name": "kubelet-plugin",
    "command": ["cd-kubelet-plugin", "-v", "$(LOG_VERBOSITY)"],
    "args": ["--cdi-root=$(CDI_ROOT)", "/var/run/cdi/extra"],
    "env": [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "LABEL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        {"name": "LOG_VERBOSITY", "value": "4"},
        {"name": "HTTP_ENDPOINT", "value": "$(POD_IP):8081"},
        {"name": "CDI_ROOT", "value": "/var/run/cdi"},
        {"name": "NVML_BACKEND", "value": "fake"},
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu"}}},
    ],
    "resources": {"requests": {"cpu": "50m"}},
    "volumeMounts": [
        {"name": "plugins", "mountPath": "/var/lib/kubelet/plugins"},
        {"name": "cdi", "mountPath": "/var/run/cdi", "readOnly": True},
        {"name": "scratch", "mountPath": "/scratch"},
    ],
}


def ctx(mode: Isolation, pod: dict[str, Any] = PLUGIN_POD) -> PodContext:
    return PodContext(
        pod=pod,
        node_name="n0",
        host_ip="127.9.0.1",
        pod_ip="127.9.1.5",
        pod_dir=PATHS.pod_dir("pod-uid"),
        paths=PATHS,
        isolation=mode,
        node_env={"FAKE_NVML_CLIQUE": "rack-clique", "NVML_BACKEND": "real"},
        kubeconfig=Path("/state/pods/pod-uid/kubeconfig"),
    )


NO_EDITS = cdi.ContainerEdits()


def launch(mode: Isolation, edits: cdi.ContainerEdits = NO_EDITS) -> Any:
    context = ctx(mode)
    return build(PLUGIN, context, IMAGE, edits, volume_sources(PLUGIN_POD, context))


def test_mountns_keeps_container_paths_and_mounts_volumes() -> None:
    spec = launch(Isolation.MOUNTNS)
    assert spec.argv == (
        "/venv/bin/cd-kubelet-plugin",
        "-v",
        "4",
        "--cdi-root=/var/run/cdi",
        "/var/run/cdi/extra",
    )
    assert spec.mounts == (
        BindMount(PATHS.pod_dir("pod-uid") / "etc-hosts", "/etc/hosts"),
        BindMount(ROOT / "var/lib/kubelet/plugins", "/var/lib/kubelet/plugins"),
        BindMount(ROOT / "var/run/cdi", "/var/run/cdi", read_only=True),
        BindMount(PATHS.pod_dir("pod-uid") / "volumes/scratch", "/scratch"),
    )
    env = spec.env
    assert env["CDI_ROOT"] == "/var/run/cdi"
    assert env["HTTP_ENDPOINT"] == "127.9.1.5:8081"
    assert (env["NODE_NAME"], env["POD_IP"], env["LABEL"], env["CPU"]) == (
        "n0",
        "127.9.1.5",
        "p",
        "50m",
    )
    assert env["KUBECONFIG"] == "/state/pods/pod-uid/kubeconfig"
    assert env["CD_SIM_ISOLATION"] == "mountns"
    assert env["PATH"] == "/venv/bin:/usr/bin"
    # The node's hardware is a default; the container's own env wins.
    assert (env["FAKE_NVML_CLIQUE"], env["NVML_BACKEND"]) == ("rack-clique", "fake")
    assert "HOSTS_FILE" not in env


def test_pathmap_rewrites_paths_in_env_args_and_sets_well_known_variables() -> None:
    spec = launch(Isolation.PATHMAP)
    assert spec.argv[-1] == str(ROOT / "var/run/cdi/extra")
    # A path inside a --flag=value word is not a whole word: kept (documented limitation).
    assert spec.argv[-2] == "--cdi-root=/var/run/cdi"
    env = spec.env
    assert env["CDI_ROOT"] == str(ROOT / "var/run/cdi")
    assert env["KUBELET_PLUGINS_DIRECTORY_PATH"] == str(ROOT / "var/lib/kubelet/plugins")
    assert env["HOSTS_FILE"] == str(PATHS.pod_dir("pod-uid") / "etc-hosts")
    assert env["CD_SIM_ISOLATION"] == "pathmap"
    assert "KUBELET_REGISTRAR_DIRECTORY_PATH" not in env  # not mounted in this pod


def test_cdi_edits_win_and_device_nodes_become_placeholders() -> None:
    edits = cdi.ContainerEdits(
        env=("NVML_BACKEND=cdi", "CLIQUE_ID=c.1"),
        device_nodes=(cdi.DeviceNode("/dev/nvidia-caps-imex-channels/channel0", "c", 234, 0, 438),),
        mounts=(cdi.Mount("/var/lib/kubelet/plugins/d/domains/u", "/imexd", ("rw",)),),
    )
    spec = launch(Isolation.PATHMAP, edits)
    assert spec.env["NVML_BACKEND"] == "cdi"
    assert spec.env["IMEXD_DIR"] == str(ROOT / "var/lib/kubelet/plugins/d/domains/u")
    (device,) = spec.devices
    assert device.target == "/dev/nvidia-caps-imex-channels/channel0"
    assert device.record == {"type": "c", "major": 234, "minor": 0, "fileMode": 438}
    assert spec.env["CD_SIM_DEV_DIR"] + "/nvidia-caps-imex-channels/channel0" == str(device.source)
    mounted = launch(Isolation.MOUNTNS, edits)
    assert BindMount(device.source, device.target) in mounted.mounts
    assert BindMount(ROOT / "var/lib/kubelet/plugins/d/domains/u", "/imexd") in mounted.mounts


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"command": [], "args": []}, "'command' is required"),
        ({"envFrom": [{"configMapRef": {"name": "x"}}]}, "envFrom is not simulated"),
        (
            {"env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]},
            "containers\\[kubelet-plugin\\].env\\[S\\]",
        ),
        (
            {"env": [{"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]},
            "fieldRef 'spec.bogus'",
        ),
        (
            {"volumeMounts": [{"name": "nope", "mountPath": "/x"}]},
            "volumeMounts\\[nope\\]: no such volume",
        ),
        ({"volumeMounts": [{"name": "plugins", "mountPath": "rel"}]}, "must be absolute"),
    ],
    ids=["no command", "envFrom", "secret env", "bad fieldRef", "unknown volume", "relative mount"],
)
def test_unsupported_or_invalid_containers_are_refused(
    change: dict[str, Any], message: str
) -> None:
    context = ctx(Isolation.MOUNTNS)
    with pytest.raises(LaunchError, match=message):
        build(
            {**PLUGIN, **change},
            context,
            IMAGE,
            cdi.ContainerEdits(),
            volume_sources(PLUGIN_POD, context),
        )


def test_unsupported_volume_kind_is_refused() -> None:
    pod = {"spec": {"volumes": [{"name": "cfg", "configMap": {"name": "x"}}]}}
    with pytest.raises(
        LaunchError, match=r"spec.volumes\[cfg\]: configMap volumes are not simulated"
    ):
        volume_sources(pod, ctx(Isolation.MOUNTNS))


def test_hosts_file_names_the_pod() -> None:
    pod = {
        "metadata": {"name": "w0"},
        "spec": {"hostAliases": [{"ip": "127.1.1.1", "hostnames": ["a", "b"]}]},
    }
    text = hosts_file(pod, "127.9.1.5")
    assert "127.9.1.5\tw0\n" in text
    assert "127.1.1.1\ta\tb\n" in text
    assert text.startswith("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n")


def test_host_network_pod_has_no_private_hosts_file() -> None:
    pod = {**PLUGIN_POD, "spec": {**PLUGIN_POD["spec"], "hostNetwork": True}}
    context = ctx(Isolation.MOUNTNS, pod)
    spec = build(PLUGIN, context, IMAGE, cdi.ContainerEdits(), volume_sources(pod, context))
    assert all(m.target != "/etc/hosts" for m in spec.mounts)


def test_pathmap_tells_the_plugin_where_the_driver_root_is_mounted() -> None:
    pod = {
        **PLUGIN_POD,
        "spec": {"volumes": [{"name": "driver-root", "hostPath": {"path": "/"}}]},
    }
    container = {
        "name": "kubelet-plugin",
        "command": ["cd-kubelet-plugin"],
        "volumeMounts": [{"name": "driver-root", "mountPath": "/driver-root", "readOnly": True}],
    }
    context = ctx(Isolation.PATHMAP, pod)
    spec = build(container, context, IMAGE, NO_EDITS, volume_sources(pod, context))
    assert spec.env["DRIVER_ROOT_CTR_PATH"] == str(ROOT)


IN_CLUSTER = InCluster(Path("/state/pods/pod-uid/serviceaccount"), "127.0.0.1", 6443)


def test_mountns_gives_the_in_cluster_configuration_not_a_kubeconfig() -> None:
    context = attrs.evolve(ctx(Isolation.MOUNTNS), in_cluster=IN_CLUSTER)
    spec = build(PLUGIN, context, IMAGE, cdi.ContainerEdits(), volume_sources(PLUGIN_POD, context))
    assert BindMount(IN_CLUSTER.directory, SERVICE_ACCOUNT_DIR, read_only=True) in spec.mounts
    assert spec.env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert spec.env["KUBERNETES_SERVICE_PORT"] == "6443"
    assert "KUBECONFIG" not in spec.env


def test_pathmap_keeps_the_kubeconfig_where_the_fixed_path_cannot_be_given() -> None:
    context = attrs.evolve(ctx(Isolation.PATHMAP), in_cluster=IN_CLUSTER)
    spec = build(PLUGIN, context, IMAGE, cdi.ContainerEdits(), volume_sources(PLUGIN_POD, context))
    assert all(m.target != SERVICE_ACCOUNT_DIR for m in spec.mounts)
    assert "KUBERNETES_SERVICE_HOST" not in spec.env
    assert spec.env["KUBECONFIG"].endswith("kubeconfig")


def test_a_pod_mounting_its_own_service_account_volume_keeps_it() -> None:
    pod = {
        **PLUGIN_POD,
        "spec": {
            **PLUGIN_POD["spec"],
            "volumes": [*PLUGIN_POD["spec"]["volumes"], {"name": "sa", "emptyDir": {}}],
        },
    }
    container = {
        **PLUGIN,
        "volumeMounts": [
            *PLUGIN.get("volumeMounts", []),
            {"name": "sa", "mountPath": SERVICE_ACCOUNT_DIR},
        ],
    }
    context = attrs.evolve(ctx(Isolation.MOUNTNS, pod), in_cluster=IN_CLUSTER)
    spec = build(container, context, IMAGE, cdi.ContainerEdits(), volume_sources(pod, context))
    assert [m.source for m in spec.mounts if m.target == SERVICE_ACCOUNT_DIR] == [
        volume_sources(pod, context)["sa"]
    ]
