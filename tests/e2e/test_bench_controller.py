"""``bench/controller.py`` in both modes on a tiny workload, so that the benchmark cannot rot: it
must start an API server and our controller, see domains reconciled and torn down, print one
JSON document of the documented shape and leave no process behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from . import kit

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

BENCH = Path(__file__).resolve().parents[2] / "bench" / "controller.py"
CONTROLLER = str(Path(sys.executable).with_name("cd-controller"))


def _run(*args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=280,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_latency_mode_measures_start_up_and_each_round() -> None:
    document = _run("--latency", "--rounds", "2", "--settle", "0.5", "--controller-cmd", CONTROLLER)
    assert document["benchmark"] == "controller-latency"
    assert list(document["control_planes"]) == ["embedded"]
    (run,) = document["control_planes"]["embedded"]["runs"]
    assert run["controller_cmd"] == CONTROLLER
    assert run["control_plane"] == "embedded"
    assert run["rounds"] == 2
    startup = run["startup"]
    assert startup["process_start_to_first_request_s"] > 0
    assert (
        startup["process_start_to_first_request_s"]
        < (startup["process_start_to_existing_domain_reconciled_s"])
    )
    assert startup["first_delete_to_gone_s"] > 0
    for phase, names in (
        ("create", {"finalizer", "status", "daemon_set", "daemon_template", "workload_template"}),
        ("delete", {"domain_gone", "daemon_set_gone", "daemon_template_gone",
                    "workload_template_gone"}),
    ):  # fmt: skip
        figures = run["seconds"][phase]
        assert set(figures) == names | {"all"}
        for spread in figures.values():
            assert 0 < spread["min"] <= spread["median"] <= spread["max"]
        assert len(run["each_round"]) == 2
    assert run["requests_per_round_by_verb"]["create"] >= 3
    assert kit.child_processes() == set()


def test_throughput_mode_reconciles_every_domain(control_plane: str) -> None:
    """On the scenarios' control plane (``--control-plane``); only the embedded API server
    counts requests, so on kube the request figures are null."""
    document = _run(
        "--domains", "3", "--controller-cmd", CONTROLLER, f"--control-plane={control_plane}"
    )
    assert document["benchmark"] == "controller"
    assert list(document["control_planes"]) == [control_plane]
    (run,) = document["control_planes"][control_plane]["runs"]
    assert run["domains"] == 3
    assert run["reconciled"] == 3
    if control_plane == "embedded":
        assert run["writes_per_domain"] > 0
        assert set(run["targets_met"]) == {"writes_per_domain", "peak_rss_mb"}
    else:
        assert run["writes_per_domain"] is None
        assert set(run["targets_met"]) == {"peak_rss_mb"}
    assert kit.child_processes() == set()
