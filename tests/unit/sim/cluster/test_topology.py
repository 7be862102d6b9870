"""Racks, cliques and the simulated hardware of each node; the state directory layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain.api import validation
from computedomain_sim.cluster.layout import StateLayout
from computedomain_sim.cluster.topology import Topology, nodes


def test_nodes_per_rack_share_a_clique() -> None:
    topo = Topology(racks=2, nodes_per_rack=2, seed="s")
    configs = nodes(topo, lambda i: f"127.9.0.{i + 1}")
    assert [n.name for n in configs] == ["r0n0", "r0n1", "r1n0", "r1n1"]
    assert [n.address for n in configs] == ["127.9.0.1", "127.9.0.2", "127.9.0.3", "127.9.0.4"]
    cliques = [n.env["FAKE_NVML_CLIQUE"] for n in configs]
    assert cliques[0] == cliques[1] != cliques[2] == cliques[3]
    for clique in cliques:
        validation.clique_id("FAKE_NVML_CLIQUE", clique)
    assert configs[0].labels["nvidia.com/gpu.present"] == "true"
    assert configs[2].labels["computedomain.sim/rack"] == "r1"
    assert {n.env["FAKE_NVML_PROFILE"] for n in configs} == {"gb200"}


def test_clique_uuid_is_stable_per_seed() -> None:
    assert (
        Topology(seed="a").cluster_uuid
        == Topology(seed="a").cluster_uuid
        != Topology(seed="b").cluster_uuid
    )


@pytest.mark.parametrize(("racks", "per_rack"), [(0, 1), (1, 0), (16, 16)])
def test_sizes_are_checked(racks: int, per_rack: int) -> None:
    with pytest.raises(ValueError, match=r"at least 1|at most 254"):
        Topology(racks, per_rack)


def test_layout_links_short_node_roots_and_removes_everything(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path / "deep" / "state")
    layout.create(["r0n0"])
    layout.create(["r0n0"])  # idempotent
    root = layout.node_root("r0n0")
    assert root.resolve() == layout.nodes_dir / "r0n0"
    assert len(str(root)) < 40
    layout.remove()
    assert not layout.root.exists()
    assert not layout.link_dir.exists()
