"""Scaffolding for the simulation scenarios: ``computedomain sim up`` in a temporary state
directory, the admin API for the test, and ``sim down`` afterwards (which must leave no
process behind)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from computedomain.sim.cluster.layout import StateLayout


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
def sim_up(tmp_path: Path) -> Iterator[SimUp]:
    """``sim up`` (1 rack, 2 nodes, not waiting for the driver's components), torn down after."""
    state = tmp_path / "sim"
    result = run_cli(
        "up",
        f"--state-dir={state}",
        "--racks=1",
        "--nodes-per-rack=2",
        "--no-wait-components",
        "--timeout=60",
        check=False,
    )
    assert result.returncode == 0, result.stderr
    up = SimUp(state, Path(result.stdout.strip().splitlines()[-1]))
    try:
        yield up
    finally:
        run_cli("down", f"--state-dir={state}", check=False)
        assert not StateLayout(state).link_dir.exists()
