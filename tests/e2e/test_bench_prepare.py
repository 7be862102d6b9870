"""``bench/prepare.py`` on a handful of claims, so that the benchmark cannot rot: it must start
a real plugin, prepare and unprepare channel and daemon claims through gRPC, measure the
round-trip floor, print one JSON document and leave no process behind, with either NVML
backend (the real one on the mock NVML library)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import kit

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

BENCH = Path(__file__).resolve().parents[2] / "bench" / "prepare.py"
OPERATIONS = ("prepare_ms", "unprepare_ms", "prepare_plus_unprepare_ms")


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: the plugin's sockets go under it (108 bytes at most)."""
    path = Path(tempfile.mkdtemp(prefix="bp-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("backend", ["fake", "real"])
def test_the_benchmark_prepares_and_unprepares_both_kinds_of_claim(
    short_dir: Path, backend: str
) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--claims", "20", "--data-dir", str(short_dir),
         "--cdi-dir", str(short_dir), f"--nvml-backend={backend}"],
        capture_output=True, text=True, timeout=200, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads(result.stdout)
    assert document["nvml_backend"] == backend
    assert document["plugin_start_to_registered_ms"] > 0
    for kind in ("channel_claims_ready_domain", "daemon_claims"):
        measured = document[kind]
        assert measured["claims"] == 20
        assert measured["plugin_cpu_ms_per_claim"] > 0
        for operation in OPERATIONS:
            figures = measured[operation]
            assert 0 < figures["p50"] <= figures["p99"] <= figures["max"]
    floor = document["round_trip_floor"]
    assert floor["samples"] == 5
    for when in ("before", "after"):
        assert floor[when]["empty_rpc_p50_ms"] > 0
        assert floor[when]["api_get_p50_ms"] > 0
    assert 0 < document["plugin_peak_rss_mb"] < 1024
    assert document["targets"] == {"p50_ms": 3, "p99_ms": 15, "rss_mb": 80}
    assert list(short_dir.iterdir()) == []  # its data and CDI directories are removed
    assert kit.child_processes() == set()
