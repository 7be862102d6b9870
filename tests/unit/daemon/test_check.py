"""``cd-imex-daemon check``: the probe passes exactly when the local IMEX daemon says READY."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest

from computedomain.daemon import check


def fake_ctl(tmp_path: Path, output: str, code: int) -> str:
    """An ``nvidia-imex-ctl`` that prints ``output`` and exits with ``code``."""
    path = tmp_path / "nvidia-imex-ctl"
    path.write_text(f"#!/bin/sh\nprintf '%s' '{output}'\nexit {code}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


CLIQUE = "7c5a1f4e-2b8d-4e6a-9f3c-1d2e3f4a5b6c.1"


def test_an_empty_clique_id_is_a_noop_success(tmp_path: Path) -> None:
    out = io.StringIO()
    check.check("", str(tmp_path / "missing-ctl"), tmp_path / "imexd.cfg", out=out)
    assert out.getvalue() == "check succeeded (noop, clique ID is empty)\n"


def test_ready_passes(tmp_path: Path) -> None:
    check.check(CLIQUE, fake_ctl(tmp_path, "READY\n", 0), tmp_path / "imexd.cfg")


@pytest.mark.parametrize(
    ("output", "code", "message"),
    [
        ("connection refused\n", 1, r"^IMEX daemon check failed: error running .*: exit status 1$"),
        ("NOT_READY\n", 0, r"^IMEX daemon not ready: NOT_READY\n$"),
        ("READY\nREADY\n", 0, r"^IMEX daemon not ready: READY\nREADY\n$"),
        ("READY", 0, r"^IMEX daemon not ready: READY$"),
    ],
    ids=["ctl-fails", "not-ready", "extra-output", "no-newline"],
)
def test_anything_but_exactly_ready_fails(
    tmp_path: Path, output: str, code: int, message: str
) -> None:
    with pytest.raises(check.CheckFailed, match=message):
        check.check(CLIQUE, fake_ctl(tmp_path, output, code), tmp_path / "imexd.cfg")


def test_a_missing_ctl_binary_fails_with_its_name(tmp_path: Path) -> None:
    with pytest.raises(check.CheckFailed, match="error running /nonexistent/nvidia-imex-ctl"):
        check.check(CLIQUE, "/nonexistent/nvidia-imex-ctl", tmp_path / "imexd.cfg")


def test_the_tool_runs_with_both_streams_on_one_pipe_and_its_exit_code() -> None:
    code, output = check.run_tool(["sh", "-c", "echo out; echo err >&2; exit 3"], 10)
    assert (code, output) == (3, "out\nerr\n")
    code, _ = check.run_tool(["sh", "-c", "kill -TERM $$"], 10)
    assert code == -15


def test_a_hung_tool_is_killed_and_reaped_at_the_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    with pytest.raises(TimeoutError, match=r"timed out after 0\.3 s"):
        check.run_tool(["sh", "-c", f"echo $$ > {pid_file}; exec sleep 30"], 0.3)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # gone, and not a zombie of ours either
        os.kill(pid, 0)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
