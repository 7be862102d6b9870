"""``bench/e2e.py`` on the smallest cluster, so that the benchmark cannot rot: it must bring a
ComputeDomain and its workers up, count each component's API requests, find each component's
processes, print one JSON document of the expected shape and leave no process behind (the figures
are the benchmark's to report, never the test's to judge)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from . import kit

pytestmark = [pytest.mark.slow, pytest.mark.scenario, pytest.mark.timeout(480)]

BENCH = Path(__file__).resolve().parents[2] / "bench" / "e2e.py"
PLUGIN_USER = "system:serviceaccount:computedomain-system:computedomain-kubelet-plugin"


def test_the_benchmark_measures_a_domain_on_one_rack_of_two_nodes(control_plane: str) -> None:
    """On the scenarios' control plane (``--control-plane``): the benchmark's flag of the same
    name takes a list, and the document keys the sizes by control plane."""
    result = subprocess.run(
        [sys.executable, str(BENCH), "--sizes", "1x2", "--within", "200",
         f"--control-plane={control_plane}"],
        capture_output=True, text=True, timeout=450, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads(result.stdout)
    assert document["benchmark"] == "e2e"
    assert list(document["control_planes"]) == [control_plane]
    (size,) = document["control_planes"][control_plane]["sizes"]
    assert size["size"] == "1x2"
    assert size["nodes"] == 2
    assert size["control_plane"] == control_plane
    for figure in ("workers_scheduled_s", "workers_running_s", "all_s", "domain_ready_s"):
        assert isinstance(size[figure], int | float)
    users = size["api_requests"]
    assert users[PLUGIN_USER]["verbs"].get("create", 0) >= 1  # the kubelet plugins worked
    if control_plane == "embedded":  # kube-apiserver's audit log has the service accounts only
        assert "bench" in users["admin"]["agents"]
    assert size["api_requests_total"] == sum(u["total"] for u in users.values())
    memory = size["peak_rss_mib"]
    # Every component's processes were found: one controller, a plugin and a daemon per node.
    assert memory["controller"]["count"] == 1
    assert memory["plugin"]["count"] == 2
    assert memory["daemon"]["count"] == 2
    assert {"max", "sum"} <= memory["plugin"].keys()
    assert isinstance(size["cpu_s"]["daemon"], int | float)
    assert kit.child_processes() == set()
