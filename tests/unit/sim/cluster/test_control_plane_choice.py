"""What a cluster on the real control plane refuses (what only the embedded API server has),
and the loopback address its programs listen on (never a node's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain_sim.cluster.cluster import ClusterConfig, ControlPlane
from computedomain_sim.kubelet.ips import AddressBlock, AddressExhausted


@pytest.mark.parametrize(
    ("field", "value"),
    [("tls", False), ("api_stages", (object(),))],
)
def test_embedded_only_features_are_refused_on_kube(field: str, value: object) -> None:
    config = ClusterConfig(state_dir=Path("s"), control_plane=ControlPlane.KUBE, **{field: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"^{field}: only the embedded control plane"):
        config.check()
    embedded = ClusterConfig(state_dir=Path("s"), **{field: value})  # type: ignore[arg-type]
    embedded.check()


def test_the_defaults_and_rbac_usage_suit_both_control_planes() -> None:
    for plane in ControlPlane:
        ClusterConfig(state_dir=Path("s"), control_plane=plane).check()
        usage = Path("usage.jsonl")
        ClusterConfig(state_dir=Path("s"), control_plane=plane, rbac_usage=usage).check()


def test_the_control_plane_address_is_no_node_address(tmp_path: Path) -> None:
    block = AddressBlock.acquire(tmp_path)
    try:
        nodes = set()
        index = 0
        while True:
            try:
                nodes.add(block.node_address(index))
            except AddressExhausted:
                break
            index += 1
        assert block.control_plane_address() not in nodes
        assert block.control_plane_address().startswith(f"127.{block.block}.0.")
        assert len(nodes) == index
    finally:
        block.release()
