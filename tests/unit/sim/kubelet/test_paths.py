"""Node paths map under the node's root and never out of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain_sim.kubelet.paths import MAX_SOCKET_PATH, NodePaths, PathError

PATHS = NodePaths(Path("/tmp/cds-0123ab/r0n0"))


@pytest.mark.parametrize(
    ("node_path", "real"),
    [
        ("/var/lib/kubelet/plugins", "/tmp/cds-0123ab/r0n0/var/lib/kubelet/plugins"),
        ("/", "/tmp/cds-0123ab/r0n0"),
        ("/a/../../../etc", "/tmp/cds-0123ab/r0n0/etc"),
        ("/tmp/cds-0123ab/r0n0/var/run/cdi", "/tmp/cds-0123ab/r0n0/var/run/cdi"),
    ],
    ids=["plain", "root", "dotdot stays inside", "already mapped"],
)
def test_host(node_path: str, real: str) -> None:
    assert PATHS.host(node_path) == Path(real)


def test_relative_paths_are_refused() -> None:
    with pytest.raises(PathError, match="not absolute"):
        PATHS.host("var/lib")


@pytest.mark.parametrize("uid", ["", "..", "a/b", "x\x00"])
def test_pod_dirs_need_safe_names(uid: str) -> None:
    with pytest.raises(PathError):
        PATHS.pod_dir(uid)


def test_plugin_sockets_fit_in_a_unix_socket_path() -> None:
    registration = PATHS.registry_dir / "compute-domain.nvidia.com-reg.sock"
    dra = PATHS.plugins_dir / "compute-domain.nvidia.com" / "dra.sock"
    assert len(str(registration)) <= MAX_SOCKET_PATH
    assert len(str(dra)) <= MAX_SOCKET_PATH


def test_create_makes_the_node_tree(tmp_path: Path) -> None:
    paths = NodePaths(tmp_path / "n0")
    paths.create()
    paths.create()  # idempotent
    for directory in (paths.registry_dir, paths.plugins_dir, paths.cdi_dir, paths.sim_dir):
        assert directory.is_dir()
