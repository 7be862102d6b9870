"""The ``bin/`` launchers: each runs its console script's target with the chosen interpreter.

The interpreter choice and the argument passing are checked with a recording stand-in for
Python (a tiny script that writes down how it was called); the real interpreter then runs the
``computedomain`` command through its launcher and an alias, end to end. Every program's
``--version`` through the launchers of a freshly installed wheel is in
``tests/integration/plugins/test_fresh_install.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.packaging import project

LAUNCHERS = sorted(project.scripts())
RECORDER = """#!{python}
import json, os, sys
with open(os.environ["RECORD_TO"], "w") as f:
    json.dump({{"interpreter": sys.argv[0], "args": sys.argv[1:]}}, f)
"""


def run(
    argv: list[str], env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, check=False, env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


def recorder(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(RECORDER.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def copy_of_bin(tmp_path: Path) -> Path:
    """The launchers in a directory of their own (no .venv next to it)."""
    target = tmp_path / "checkout" / "bin"
    shutil.copytree(project.BIN, target)
    return target


def base_env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "RECORD_TO": str(tmp_path / "record.json")}


def recorded(tmp_path: Path) -> tuple[str, list[str]]:
    """(interpreter, arguments) of the recording stand-in's last run."""
    record = json.loads((tmp_path / "record.json").read_text())
    return str(record["interpreter"]), [str(a) for a in record["args"]]


@pytest.mark.parametrize("name", LAUNCHERS)
def test_a_launcher_runs_its_console_scripts_target(
    name: str, copy_of_bin: Path, tmp_path: Path
) -> None:
    module, _, function = project.scripts()[name].partition(":")
    assert function == "main"  # the launchers call main(), as the console scripts do
    env = base_env(tmp_path) | {"COMPUTEDOMAIN_PYTHON": str(recorder(tmp_path / "py"))}
    done = run([str(copy_of_bin / name), "-v", "4", "run", "two words"], env)
    assert done.returncode == 0, done.stderr
    _, args = recorded(tmp_path)
    assert args[:2] == ["-P", "-c"]
    assert args[3:] == [module, str(copy_of_bin / name), "-v", "4", "run", "two words"]


@pytest.mark.parametrize(("alias", "target"), sorted(project.ALIASES.items()))
def test_an_upstream_name_runs_our_launcher(
    alias: str, target: str, copy_of_bin: Path, tmp_path: Path
) -> None:
    env = base_env(tmp_path) | {"COMPUTEDOMAIN_PYTHON": str(recorder(tmp_path / "py"))}
    done = run([str(copy_of_bin / alias), "--version"], env)
    assert done.returncode == 0, done.stderr
    module = project.scripts()[target].partition(":")[0]
    _, args = recorded(tmp_path)
    assert args[3:] == [module, str(copy_of_bin / target), "--version"]


def test_the_checkouts_venv_is_used_when_no_interpreter_is_named(
    copy_of_bin: Path, tmp_path: Path
) -> None:
    venv_python = recorder(copy_of_bin.parent / ".venv" / "bin" / "python")
    run([str(copy_of_bin / "cd-imex-daemon"), "check"], base_env(tmp_path))
    assert recorded(tmp_path)[0] == f"{copy_of_bin}/../.venv/bin/python"
    assert venv_python.exists()


def test_python3_on_the_path_is_the_last_resort(copy_of_bin: Path, tmp_path: Path) -> None:
    recorder(tmp_path / "path" / "python3")
    env = base_env(tmp_path) | {"PATH": f"{tmp_path / 'path'}:{os.environ['PATH']}"}
    done = run([str(copy_of_bin / "cd-controller")], env)
    assert done.returncode == 0, done.stderr
    assert recorded(tmp_path)[0] == str(tmp_path / "path" / "python3")


def test_the_real_program_runs_and_its_exit_code_passes_through(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "COMPUTEDOMAIN_PYTHON": sys.executable}
    done = run([str(project.BIN / "computedomain"), "--version"], env)
    assert (done.returncode, done.stdout.strip()) == (0, project.version())
    wrong = run([str(project.BIN / "computedomain"), "no-such-command"], env)
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("usage: computedomain ")  # argv[0] is the launcher's


def test_a_computedomain_folder_in_the_working_directory_is_never_imported(
    tmp_path: Path,
) -> None:
    decoy = tmp_path / "computedomain" / "cli"
    decoy.mkdir(parents=True)
    (tmp_path / "computedomain" / "__init__.py").write_text("")
    (decoy / "__init__.py").write_text("")
    (decoy / "main.py").write_text("def main():\n    print('decoy')\n    return 0\n")
    env = {"PATH": os.environ["PATH"], "COMPUTEDOMAIN_PYTHON": sys.executable}
    done = run([str(project.BIN / "computedomain"), "--version"], env, cwd=tmp_path)
    assert done.stdout.strip() == project.version()


def test_the_daemon_runs_its_probe_through_the_launcher() -> None:
    # This checkout, the real interpreter: the probe answers, and run without its settings
    # stops with a message naming the missing one.
    env = {"PATH": os.environ["PATH"], "COMPUTEDOMAIN_PYTHON": sys.executable}
    probe = run([str(project.BIN / "cd-imex-daemon"), "check"], env)
    assert probe.returncode == 0, probe.stderr
    assert "check succeeded" in probe.stdout
    daemon = run([str(project.BIN / "cd-imex-daemon"), "run"], env)
    assert daemon.returncode == 2
    assert "COMPUTE_DOMAIN_UUID" in daemon.stderr or "CDI" in daemon.stderr
    assert "Traceback" not in daemon.stderr


def test_every_file_in_bin_is_documented_in_its_readme() -> None:
    readme = (project.BIN / "README").read_text()
    for launcher in project.BIN.iterdir():
        if launcher.name != "README":
            assert launcher.name in readme
            assert launcher.name in [*project.scripts(), *project.ALIASES]
