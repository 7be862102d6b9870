"""Every file the kubelet plugin reads on a simulated node is where the sim overlay's DaemonSet
makes it look: the plugin's own Config is parsed from the rendered container env, each path it
reads is mapped through the container's volume mounts to the node's directory, and the node
agent must have written a file there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from computedomain.api import names
from computedomain.kubeletplugin import config as plugin_config
from computedomain.nvml import fake, hardware
from computedomain.nvml.interface import BackendName
from computedomain.nvml.real import locate_library
from computedomain_sim import nvmlmock
from computedomain_sim.cluster import kustomize, topology
from computedomain_sim.cluster.cluster import DEFAULT_MANIFESTS, PLUGIN_DAEMONSET
from computedomain_sim.kubelet.node import NodeAgent
from computedomain_sim.kubelet.paths import NodePaths


def _plugin_pod_spec() -> dict[str, Any]:
    objects = kustomize.render_builtin(DEFAULT_MANIFESTS)
    (daemon_set,) = [
        o for o in objects if o["kind"] == "DaemonSet" and o["metadata"]["name"] == PLUGIN_DAEMONSET
    ]
    return dict(daemon_set["spec"]["template"]["spec"])


def _env(container: dict[str, Any]) -> dict[str, str]:
    env = {"NODE_NAME": "r0n0", "NAMESPACE": "computedomain-system", "POD_IP": "127.9.0.5"}
    for item in container["env"]:
        if "value" in item:
            env[item["name"]] = str(item["value"])
    return env


def _node_path(spec: dict[str, Any], container_path: Path) -> str:
    """The node path a container path lands on, through the deepest matching hostPath mount."""
    host_paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    best = ""
    target = ""
    (container,) = spec["containers"]
    for mount in container["volumeMounts"]:
        mount_path = mount["mountPath"].rstrip("/") or "/"
        inside = str(container_path) == mount_path or str(container_path).startswith(
            mount_path.rstrip("/") + "/"
        )
        if inside and len(mount_path) > len(best) and mount["name"] in host_paths:
            best = mount_path
            rest = str(container_path)[len(mount_path) :].lstrip("/")
            target = str(Path(host_paths[mount["name"]]) / rest)
    assert best, f"{container_path} is not on any hostPath volume of the plugin pod"
    return target


def test_every_file_the_plugin_reads_exists_on_the_node(tmp_path: Path) -> None:
    spec = _plugin_pod_spec()
    (container,) = spec["containers"]
    topo = topology.Topology(racks=1, nodes_per_rack=1)
    (node,) = topology.nodes(topo, lambda _i: "127.9.0.1")
    config = plugin_config.parse([], {**node.env, **_env(container)})
    assert config.nvml_backend is BackendName.FAKE
    assert config.fake_nvml_clique == topo.clique(0)
    paths = NodePaths(tmp_path / "r0n0")
    agent = NodeAgent(None, node, paths)  # type: ignore[arg-type]  # no API call is made
    agent.boot_id()
    agent.write_node_files()

    read = {
        "ALT_PROC_DEVICES_PATH": config.proc_devices,
        "BOOT_ID_PATH": config.boot_id_path,
        "fabric-imex-mgmt": config.fabric_imex_mgmt,
    }
    for what, container_path in read.items():
        on_node = paths.host(_node_path(spec, container_path))
        assert on_node.is_file(), f"{what}: {container_path} -> {on_node} is missing"
    fabric = paths.host(_node_path(spec, config.fabric_imex_mgmt)).read_text()
    assert fabric == fake.fabric_imex_mgmt_text()
    proc_devices = paths.host(_node_path(spec, config.proc_devices)).read_text()
    assert names.IMEX_CHANNELS_PROC_NAME in proc_devices
    # The directories the plugin and the kubelet share are the same node directories.
    assert _node_path(spec, config.cdi_root) == names.CDI_DEFAULT_ROOT
    assert _node_path(spec, config.plugins_dir) == names.KUBELET_PLUGINS_DIR
    assert _node_path(spec, config.registrar_dir) == names.KUBELET_REGISTRAR_DIR


@pytest.mark.parametrize(
    ("profile", "fabric"), [("gb200", True), ("h100", False)], ids=["gb200", "h100"]
)
def test_only_a_fabric_profile_has_the_imex_capability(profile: str, fabric: bool) -> None:
    files = topology.driver_files(profile)
    assert (names.FABRIC_IMEX_MGMT_PATH in files) is fabric


def test_a_reboot_writes_the_node_files_again(tmp_path: Path) -> None:
    (node,) = topology.nodes(topology.Topology(1, 1), lambda _i: "127.9.0.1")
    paths = NodePaths(tmp_path / "n")
    agent = NodeAgent(None, node, paths)  # type: ignore[arg-type]
    agent.new_boot()
    fabric = paths.host(names.FABRIC_IMEX_MGMT_PATH)
    fabric.unlink()
    agent.new_boot()
    assert fabric.is_file()


def test_with_the_real_backend_the_plugin_finds_the_mock_library_and_its_profile(
    tmp_path: Path,
) -> None:
    library = nvmlmock.build()
    spec = _plugin_pod_spec()
    (container,) = spec["containers"]
    topo = topology.Topology(racks=2, nodes_per_rack=1, nvml_backend=nvmlmock.NvmlBackend.REAL)
    node = topology.nodes(topo, lambda i: f"127.9.0.{i + 1}")[1]
    env = {**node.env, **_env(container)}  # the container's own env wins, as in a launch
    config = plugin_config.parse([], env)
    assert config.nvml_backend is BackendName.REAL
    paths = NodePaths(tmp_path / node.name)
    agent = NodeAgent(None, node, paths)  # type: ignore[arg-type]  # no API call is made
    agent.boot_id()
    agent.write_node_files()
    driver_root = paths.host(_node_path(spec, config.container_driver_root))
    assert locate_library(driver_root) == library.resolve()
    profile = paths.host(_node_path(spec, Path(env["NVML_MOCK_PROFILE"])))
    served = fake.nvml_gpus(hardware.read(profile))
    assert served == fake.FakeNvml(clique=topo.clique(1)).gpus()
