"""Run a simulated cluster in the background and manage it through its state directory: the
work behind ``computedomain sim up|run|status|down``.

Called by :mod:`computedomain_sim.cli.sim_cluster` and the demo. ``up`` starts
``computedomain sim run`` as a detached process (its own session; output to
``logs/cluster.log``) and waits until the run process reports Ready (or Failed) in
``cluster.json`` (written by :mod:`.hosting`, which hosts the cluster in that process);
``down`` stops the run process (SIGTERM, then SIGKILL), kills any container process group still
recorded under ``pids/`` (only processes that carry the simulation's environment marker, so a
recycled PID is never hit) and removes the state directory. Nothing here imports the simulation
itself, so ``sim up`` and ``sim down`` start in a fraction of the time.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from computedomain.runtime import files

from .layout import StateLayout

__all__ = [
    "FAILED",
    "READY",
    "STARTING",
    "STOPPED",
    "ClusterFailed",
    "down",
    "read_state",
    "up",
    "write_state",
]

STARTING, READY, FAILED, STOPPED = "Starting", "Ready", "Failed", "Stopped"
_MARKER = b"CD_SIM_ISOLATION="


class ClusterFailed(RuntimeError):
    """The background cluster did not come up; the message has the reason and log tail."""


def read_state(layout: StateLayout) -> dict[str, Any] | None:
    """``cluster.json``, or None when there is none (or it is unreadable)."""
    try:
        data = json.loads(layout.state_file.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_state(layout: StateLayout, state: dict[str, Any]) -> None:
    """Replace ``cluster.json`` (atomically: ``up`` polls it)."""
    files.atomic_write(layout.state_file, json.dumps(state, indent=2).encode())


def up(layout: StateLayout, run_args: Sequence[str], *, within: float) -> dict[str, Any]:
    """Start ``computedomain sim run <run_args>`` in the background and wait for Ready.

    Returns the Ready state. Raises :class:`ClusterFailed` (after cleaning up) when the run
    process fails, exits, or is not Ready within ``within`` seconds; raises ``FileExistsError``
    when a cluster already runs from this state directory.
    """
    state = read_state(layout)
    if state is not None and _alive(int(state.get("pid", 0))):
        msg = f"a simulated cluster already runs from {layout.root} (pid {state['pid']})"
        raise FileExistsError(msg)
    layout.logs_dir.mkdir(parents=True, exist_ok=True)
    layout.state_file.unlink(missing_ok=True)
    with layout.cluster_log.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "computedomain.cli.main", "sim", "run", *run_args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        state = read_state(layout) or {}
        if state.get("phase") == READY:
            return state
        if state.get("phase") == FAILED or process.poll() is not None:
            down(layout, keep_logs=True)
            msg = f"the simulated cluster failed: {state.get('error', 'exited')}\n{_tail(layout)}"
            raise ClusterFailed(msg)
        time.sleep(0.1)
    down(layout, keep_logs=True)
    msg = f"the simulated cluster was not ready within {within:g}s\n{_tail(layout)}"
    raise ClusterFailed(msg)


def down(layout: StateLayout, *, keep_logs: bool = False, within: float = 60.0) -> list[int]:
    """Stop the cluster of ``layout`` and remove its state; returns the PIDs it had to kill
    (besides the run process). Idempotent."""
    state = read_state(layout) or {}
    pid = int(state.get("pid", 0))
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + within
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    killed = [p for p in _recorded_groups(layout) if _kill_group(p)]
    if keep_logs:
        logs = layout.cluster_log.read_bytes() if layout.cluster_log.exists() else b""
        layout.remove()
        layout.logs_dir.mkdir(parents=True, exist_ok=True)
        layout.cluster_log.write_bytes(logs)
    else:
        layout.remove()
    return killed


def _recorded_groups(layout: StateLayout) -> list[int]:
    if not layout.pids_dir.is_dir():
        return []
    return sorted(int(p.name) for p in layout.pids_dir.iterdir() if p.name.isdigit())


def _kill_group(pgid: int) -> bool:
    """SIGKILL the process group ``pgid`` if its leader is one of our containers."""
    try:
        environ = Path(f"/proc/{pgid}/environ").read_bytes()
    except OSError:
        return False
    if _MARKER not in environ or os.getpgid(pgid) != pgid:
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
        return True
    return False


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            return False
    return True


def _tail(layout: StateLayout, lines: int = 40) -> str:
    try:
        text = layout.cluster_log.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
