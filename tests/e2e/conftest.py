"""Scaffolding for the simulation scenarios: ``computedomain sim up`` in a temporary state
directory, the admin API for the test, and ``sim down`` afterwards (which must leave no
process behind).

Two clusters are shared by several scenario modules: :func:`default_cluster` and
:func:`leader_election_cluster`. Each lives for the session of the xdist worker that first asks
for it, and the modules that use one are in one xdist group, so one ``sim up`` serves them all
(a cluster's start costs tens of CPU-seconds, and ``make test`` has a 10-minute budget on two
cores). The modules leave the nodes free after each test (:func:`.kit_extra.release`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import pytest

from computedomain_sim.cluster.layout import StateLayout

if TYPE_CHECKING:
    from . import kit_extra


@attrs.frozen
class SimUp:
    """A cluster started with ``sim up``: its state directory and kubeconfig."""

    state_dir: Path
    kubeconfig: Path

    def cli(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run ``computedomain sim <args> --state-dir <state>``."""
        return run_cli(*args, f"--state-dir={self.state_dir}", check=check, timeout=timeout)


def run_cli(
    *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "computedomain.cli.main", "sim", *args],
        capture_output=True,
        text=True,
        check=check,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line or environment contains ``text`` (our own excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text.encode() in blob and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.fixture
def sim_up(tmp_path: Path, control_plane: str) -> Iterator[SimUp]:
    """``sim up`` (1 rack, 2 nodes, not waiting for the driver's components), torn down after."""
    state = tmp_path / "sim"
    within = 60 if control_plane == "embedded" else 150  # a real API server starts slower
    result = run_cli(
        "up",
        f"--state-dir={state}",
        "--racks=1",
        "--nodes-per-rack=2",
        "--no-wait-components",
        f"--timeout={within}",
        f"--control-plane={control_plane}",
        check=False,
        timeout=within + 60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(StateLayout(state).state_file.read_text())["controlPlane"] == control_plane
    up = SimUp(state, Path(result.stdout.strip().splitlines()[-1]))
    try:
        yield up
    finally:
        run_cli("down", f"--state-dir={state}", check=False)
        assert not StateLayout(state).link_dir.exists()


@pytest.fixture(scope="session")
def default_cluster(
    tmp_path_factory: pytest.TempPathFactory, control_plane: str
) -> Iterator[kit_extra.Shared]:
    """The simulation's manifests on one rack of four nodes, the IMEX stand-ins behind
    :func:`.kit_extra.imex_wrappers`. Each test frees the nodes it used."""
    from . import kit, kit_extra  # kit imports this module: import it once the tests run

    root = tmp_path_factory.mktemp("scen2-default")
    markers = root / "markers"
    markers.mkdir()
    imex_path = kit_extra.imex_wrappers(root / "imex", markers)
    with kit.module_cluster(
        tmp_path_factory,
        "scen2-default-sim",
        racks=1,
        nodes_per_rack=4,
        extra_args=[f"--imex-path={imex_path}"],
        control_plane=control_plane,
    ) as cluster:
        yield kit_extra.Shared(cluster, markers)


@pytest.fixture(scope="session")
def leader_election_cluster(
    tmp_path_factory: pytest.TempPathFactory, control_plane: str
) -> Iterator[kit_extra.Shared]:
    """Two controller replicas with leader election (the ``leader-election`` component over
    the simulation's manifests), one rack of two nodes, recording RBAC use
    (``--rbac-usage``; on kube, kube-apiserver's audit log)."""
    from . import kit, kit_extra  # kit imports this module: import it once the tests run

    root = tmp_path_factory.mktemp("scen2-le")
    manifests = kit_extra.overlay(root / "overlay", components=["leader-election"])
    usage = root / "rbac-usage.jsonl"
    with kit.module_cluster(
        tmp_path_factory,
        "scen2-le-sim",
        racks=1,
        nodes_per_rack=2,
        extra_args=[f"--manifests={manifests}", f"--rbac-usage={usage}"],
        control_plane=control_plane,
    ) as cluster:
        yield kit_extra.Shared(cluster, root, usage, control_plane)
