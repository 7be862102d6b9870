"""The configuration reference (docs/configuration.md) is complete and current.

Two independent checks: the file equals what ``python -m computedomain.cli.docs`` generates
from the programs' declarations (so a flag added without ``make docs`` fails here), and every
flag and environment variable that each real program's ``--help`` shows appears in that
program's section (so a flag added outside the declarations fails too).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path

import pytest

from computedomain.cli import docs
from computedomain.kubeletplugin import config as plugin_config
from computedomain.runtime import flags

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "configuration.md"
PRESENT = [p for p in docs.PROGRAMS if importlib.util.find_spec(p.module) is not None]

_FLAG = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")
_ENVS = re.compile(r"\[env ([A-Z0-9_, ]+)\]")


def test_the_reference_is_current() -> None:
    assert REFERENCE.read_text() == docs.render(), "docs/configuration.md is stale: run make docs"


def test_the_check_mode_agrees() -> None:
    assert docs.main(["--check", "--output", str(REFERENCE)]) == 0


def _section(text: str, program: str) -> str:
    start = text.index(f"## `{program}`")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _help_names(program: str) -> tuple[set[str], set[str]]:
    result = subprocess.run(
        [str(REPO / "bin" / program), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "10000"},
    )
    assert result.returncode == 0, result.stderr
    options = result.stdout.split("options:", 1)[-1]
    flag_names = {f for f in _FLAG.findall(options) if f not in ("-h", "--help", "--version")}
    envs = {name.strip() for group in _ENVS.findall(options) for name in group.split(",")}
    return flag_names, envs


@pytest.mark.parametrize("program", PRESENT, ids=[p.name for p in PRESENT])
def test_every_flag_and_variable_a_program_accepts_is_documented(program: docs.Program) -> None:
    flags, envs = _help_names(program.name)
    assert flags, f"no flags found in {program.name} --help"
    assert envs, f"no environment variables found in {program.name} --help"
    section = _section(REFERENCE.read_text(), program.name)
    missing = sorted(n for n in flags | envs if f"`{n}`" not in section)
    assert not missing, f"{program.name}: not in docs/configuration.md: {missing}"


def test_an_undocumented_option_makes_the_check_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = tmp_path / "configuration.md"
    assert docs.main(["--output", str(written)]) == 0
    extra = flags.Option("--brand-new", "BRAND_NEW", default="x")
    monkeypatch.setattr(plugin_config, "OPTIONS", (*plugin_config.OPTIONS, extra))
    assert docs.main(["--check", "--output", str(written)]) == 1
    assert "`--brand-new` | `BRAND_NEW`" in docs.render()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.25, "250ms"), (15, "15s"), (600, "10m"), (5400, "1h30m"), (90.5, "1m30.5s")],
)
def test_durations_are_written_the_go_way(seconds: float, text: str) -> None:
    assert docs.go_duration(seconds) == text
