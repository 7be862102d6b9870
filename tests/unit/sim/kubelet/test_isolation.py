"""The two isolation modes, for real: a process in a private mount namespace sees its mounts at
container paths and the host sees nothing; where that is impossible, pathmap is chosen."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from computedomain_sim.kubelet import isolation
from computedomain_sim.kubelet.launch import BindMount, Isolation, LaunchSpec
from tests.unit.sim import standalone


def spec(tmp_path: Path, argv: list[str]) -> LaunchSpec:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "imexd.cfg").write_text("SERVER_PORT=50000\n")
    (tmp_path / "hosts").write_text("127.9.1.5\tcompute-domain-daemon-0000\n")
    (tmp_path / "channel0").write_text('{"type": "c", "major": 234, "minor": 0}')
    return LaunchSpec(
        argv=tuple(argv),
        env={"PATH": os.environ["PATH"], "MARK": "x"},
        cwd="/imexd",
        mounts=(
            BindMount(tmp_path / "hosts", "/etc/hosts"),
            BindMount(tmp_path / "src", "/imexd"),
            BindMount(tmp_path / "src", "/var/run/cdi", read_only=True),
            BindMount(tmp_path / "channel0", "/dev/nvidia-caps-imex-channels/channel0"),
        ),
        devices=(),
        isolation=Isolation.MOUNTNS,
    )


def test_detect_honours_the_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(isolation.ENV_OVERRIDE, "pathmap")
    assert isolation.detect() is Isolation.PATHMAP
    monkeypatch.setenv(isolation.ENV_OVERRIDE, "chroot")
    with pytest.raises(isolation.IsolationError, match="expected mountns or pathmap"):
        isolation.detect()


def test_detect_matches_what_the_machine_can_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(isolation.ENV_OVERRIDE, raising=False)
    available, why = isolation.mountns_available()
    assert isolation.detect() is (Isolation.MOUNTNS if available else Isolation.PATHMAP)
    assert available or why  # a machine that cannot says why


def test_pathmap_runs_the_command_itself() -> None:
    assert isolation.container_argv(Isolation.PATHMAP, Path("/x.json"), ["a", "b"]) == ["a", "b"]
    assert isolation.exec_argv(Isolation.PATHMAP, 1, ["check"]) == ["check"]


def test_mountns_container_sees_its_mounts_and_the_host_does_not(tmp_path: Path) -> None:
    available, why = isolation.mountns_available()
    if not available:
        # This machine runs pathmap; the test above covers the choice.
        assert why
        return
    script = (
        "cat /imexd/imexd.cfg; cat /etc/hosts; ls /dev/nvidia-caps-imex-channels; pwd; echo $MARK;"
        " touch /var/run/cdi/x 2>/dev/null && echo writable || echo read-only; sleep 30"
    )
    launch = spec(tmp_path, ["sh", "-c", script])
    spec_file = tmp_path / "spec.json"
    scratch = tmp_path / "root"
    scratch.mkdir()
    spec_file.write_text(launch.to_json(scratch))
    process = subprocess.Popen(
        isolation.container_argv(Isolation.MOUNTNS, spec_file, launch.argv),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline().strip() for _ in range(6)]
        assert lines == [
            "SERVER_PORT=50000",
            "127.9.1.5\tcompute-domain-daemon-0000",
            "channel0",
            "/imexd",
            "x",
            "read-only",
        ]
        probe = subprocess.run(
            isolation.exec_argv(Isolation.MOUNTNS, process.pid, ["cat", "/imexd/imexd.cfg"]),
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        assert probe.stdout == "SERVER_PORT=50000\n"
        assert not Path("/imexd").exists()
        assert not Path("/dev/nvidia-caps-imex-channels").exists()
        assert Path("/etc/hosts").read_text() != "127.9.1.5\tcompute-domain-daemon-0000\n"
    finally:
        process.kill()
        process.wait(timeout=30)


def test_mountns_reports_a_missing_program(tmp_path: Path) -> None:
    if not isolation.mountns_available()[0]:
        return
    launch = spec(tmp_path, ["no-such-program-xyz"])
    scratch = tmp_path / "root"
    scratch.mkdir()
    (tmp_path / "spec.json").write_text(launch.to_json(scratch))
    result = subprocess.run(
        isolation.container_argv(Isolation.MOUNTNS, tmp_path / "spec.json", launch.argv),
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert result.returncode == 127
    assert "exec no-such-program-xyz" in result.stderr


def test_the_container_init_is_a_standard_library_script_run_without_site() -> None:
    # It starts once per container: no site, no virtual environment, no package.
    argv = isolation.container_argv(Isolation.MOUNTNS, Path("/spec.json"), ["true"])
    assert argv[-4:] == ["-I", "-S", str(isolation.NSINIT), "/spec.json"]
    assert standalone.modules_loaded(isolation.NSINIT, ["nsinit"], ("computedomain", "site")) == []
