"""``bench/prepare.py`` on a handful of claims, so that the benchmark cannot rot: it must start
a real plugin, prepare and unprepare channel and daemon claims through gRPC, measure the
round-trip floor, print one JSON document of the expected shape and leave no process behind,
with either NVML backend (the real one on the mock NVML library). The figures themselves are the
benchmark's to report, never the test's to judge."""

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


def _is_figure(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@pytest.mark.parametrize("backend", ["fake", "real"])
def test_the_benchmark_prepares_and_unprepares_both_kinds_of_claim(
    short_dir: Path, backend: str
) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--claims", "3", "--data-dir", str(short_dir),
         "--cdi-dir", str(short_dir), f"--nvml-backend={backend}"],
        capture_output=True, text=True, timeout=200, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads(result.stdout)
    assert document["nvml_backend"] == backend
    assert _is_figure(document["plugin_start_to_registered_ms"])
    for kind in ("channel_claims_ready_domain", "daemon_claims"):
        measured = document[kind]
        assert measured["claims"] == 3  # every claim asked for went through
        assert _is_figure(measured["plugin_cpu_ms_per_claim"])
        for operation in OPERATIONS:
            assert set(measured[operation]) >= {"p50", "p99", "max"}
            assert all(_is_figure(v) for v in measured[operation].values())
    floor = document["round_trip_floor"]
    assert _is_figure(floor["samples"])
    for when in ("before", "after"):
        assert _is_figure(floor[when]["empty_rpc_p50_ms"])
        assert _is_figure(floor[when]["api_get_p50_ms"])
    assert _is_figure(document["plugin_peak_rss_mb"])
    assert document["targets"].keys() == {"p50_ms", "p99_ms", "rss_mb"}
    assert all(_is_figure(v) for v in document["targets"].values())
    assert list(short_dir.iterdir()) == []  # its data and CDI directories are removed
    assert kit.child_processes() == set()
