"""``computedomain demo`` (what ``make demo`` runs) at its default size: it brings two racks up,
reaches a Ready domain with a worker on every node, prints the summary (every node's index and
DNS name, a channel device per worker), tears down, exits 0 and leaves no process behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from computedomain.api import names

from .conftest import processes_mentioning

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

NODES = ("r0n0", "r0n1", "r1n0", "r1n1")


def test_the_demo_reaches_a_ready_domain_prints_the_summary_and_tears_down(
    tmp_path: Path,
) -> None:
    state = tmp_path / "demo"
    result = subprocess.run(
        [sys.executable, "-m", "computedomain.cli.main", "demo", f"--state-dir={state}"],
        capture_output=True, text=True, timeout=280, check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr}"
    summary = out[out.index("ComputeDomain demo/demo Ready") :]

    members = re.findall(r"^\s+(\d+)\s+(\S+)\s+(\S+)\s+(r\dn\d)\s+Ready$", summary, re.M)
    assert sorted(node for *_, node in members) == sorted(NODES)
    for index, dns_name, _ip, node in members:
        assert dns_name == names.dns_name(int(index)), (node, dns_name)
    for rack in ("r0", "r1"):  # each clique numbers its own daemons from 0
        assert sorted(int(i) for i, _, _, node in members if node.startswith(rack)) == [0, 1]
    assert "DNS names from the daemon hosts file" in summary

    workers = re.findall(
        r"^\s+(r\dn\d)\s+(demo-workers-\S+)\s+(/dev/nvidia-caps-imex-channels/\S+)", summary, re.M
    )
    assert sorted(node for node, *_ in workers) == sorted(NODES)
    assert f"kubectl --kubeconfig {state.resolve() / 'kubeconfig'}" in out

    assert processes_mentioning(str(state.resolve())) == []
    assert not state.exists()
