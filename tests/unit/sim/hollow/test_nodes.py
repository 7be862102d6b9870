"""Hollow nodes' pure parts: the machines, each plugin's configuration, the daemon container."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain.api.errors import ConfigError
from computedomain.kube.client import ClientConfig
from computedomain_sim.cluster import topology
from computedomain_sim.hollow.cluster import HollowConfig, node_configs
from computedomain_sim.hollow.daemon import is_daemon_container
from computedomain_sim.hollow.plugin import plugin_config
from computedomain_sim.kubelet.paths import NodePaths

CLIQUE = "2df84740-d3cb-b5ce-4e7e-98352b5a71b5.0"


def _config(racks: int, per_rack: int) -> HollowConfig:
    return HollowConfig(
        client=ClientConfig(url="http://127.0.0.1:1"),
        state_dir=Path("/x"),
        racks=racks,
        nodes_per_rack=per_rack,
    )


def test_1152_nodes_in_64_racks_have_unique_names_addresses_and_one_clique_per_rack() -> None:
    nodes = node_configs(_config(64, 18))
    assert len(nodes) == 1152
    assert len({n.name for n in nodes}) == len({n.address for n in nodes}) == 1152
    cliques = {n.labels[topology.CLIQUE_LABEL] for n in nodes}
    assert len(cliques) == 64
    assert all(n.env["FAKE_NVML_CLIQUE"] == n.labels[topology.CLIQUE_LABEL] for n in nodes)
    assert nodes[18].name == "r1n0"


def test_an_empty_cluster_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        _config(0, 18)


def test_the_plugin_config_keeps_every_path_under_the_node_root(tmp_path: Path) -> None:
    paths = NodePaths(tmp_path / "r0n0")
    config = plugin_config(
        "r0n0",
        paths,
        namespace="ns",
        profile="gb200",
        clique=CLIQUE,
        base_env={"FEATURE_GATES": "", "HEALTHCHECK_PORT": "51515"},
    )
    assert config.node_name == "r0n0"
    assert config.healthcheck_port < 0
    for path in (config.dra_socket, config.registration_socket, config.cdi_root):
        assert Path(path).is_relative_to(paths.root)


def test_a_bad_profile_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        plugin_config("n", NodePaths(tmp_path), namespace="ns", profile="nope", clique=CLIQUE)


def test_the_daemon_container_is_recognised_by_its_command() -> None:
    assert is_daemon_container({"command": ["cd-imex-daemon", "-v", "4", "run"]})
    assert is_daemon_container({"command": ["/usr/bin/cd-imex-daemon"], "args": ["run"]})
    assert not is_daemon_container({"command": ["cd-imex-daemon", "check"]})
    assert not is_daemon_container({"command": ["python3"]})
    assert not is_daemon_container({})
