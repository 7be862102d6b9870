"""``cd-imex-daemon check`` runs as a fresh process for every probe of every daemon pod (once a
second while a domain forms), so what it loads is its cost: not logging, asyncio or the API
client, which only ``run`` needs, nor attrs (the config, the feature gates), nor subprocess
(the ctl tool is spawned directly), pathlib, shutil, argparse, ``re``, ``enum`` or ``typing``,
with or without flags, whether the probe passes or fails (bench/e2e.py measures the effect)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from computedomain.daemon import check

HEAVY = (
    "asyncio", "logging", "kubernetes", "aiohttp", "grpc", "computedomain.kube", "attr", "cattrs"
)  # fmt: skip
# Standard-library modules the probe does without (each was milliseconds of its CPU).
AVOIDED = ("subprocess", "pathlib", "shutil", "argparse", "re", "enum", "typing", "functools")
# What the probe may load of the package.
PROBE_MODULES = [
    "computedomain",
    "computedomain.api",
    "computedomain.api.errors",
    "computedomain.api.featuregates",
    "computedomain.api.names",
    "computedomain.api.validation",
    "computedomain.daemon",
    "computedomain.daemon.check",
    "computedomain.daemon.main",
    "computedomain.daemon.options",
    "computedomain.runtime",
    "computedomain.runtime.flags",
]


def loaded_by_check(argv: list[str], env: dict[str, str]) -> tuple[str, int, dict[str, list[str]]]:
    """Run ``main(argv)`` in a fresh interpreter; its stdout's first line, its exit code and
    what it loaded beyond what the interpreter had at start: ``heavy`` (HEAVY prefixes),
    ``package`` (computedomain modules), ``other`` (what of AVOIDED it loaded)."""
    code = (
        "import json, sys\n"
        "before = set(sys.modules)\n"  # what the interpreter's start loaded is not the probe's
        "from computedomain.daemon import main\n"
        f"code = main.main({argv!r})\n"
        "loaded = sorted(set(sys.modules) - before)\n"
        f"heavy = [m for m in loaded if m.startswith({HEAVY!r})]\n"
        "package = [m for m in loaded if m.split('.')[0] == 'computedomain']\n"
        f"other = [m for m in loaded if m in {AVOIDED!r}]\n"
        "print(json.dumps([code, {'heavy': heavy, 'package': package, 'other': other}]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**{k: v for k, v in os.environ.items() if k != "CLIQUE_ID"}, **env},
    )
    lines = result.stdout.splitlines()
    code, loaded = json.loads(lines[-1])
    return lines[0], code, loaded


def test_the_no_op_probe_loads_no_heavy_module() -> None:
    # A flag on the command line: the parser is built, without shutil.
    first, code, loaded = loaded_by_check(["-v", "0", "check"], {})
    assert (first, code) == (check.NOOP_MESSAGE, 0)
    assert loaded == {"heavy": [], "package": PROBE_MODULES, "other": []}


def test_without_flags_the_probe_builds_no_parser() -> None:
    first, code, loaded = loaded_by_check(["check"], {"CLIQUE_ID": ""})
    assert (first, code) == (check.NOOP_MESSAGE, 0)
    assert loaded == {"heavy": [], "package": PROBE_MODULES, "other": []}


@pytest.mark.parametrize("argv", [["check"], ["--imexd-dir", "/nonexistent", "check"]])
def test_a_probe_that_asks_the_ctl_tool_loads_nothing_more(argv: list[str], tmp_path: Path) -> None:
    ready = tmp_path / "ctl"
    ready.write_text("#!/bin/sh\necho READY\n")
    ready.chmod(0o755)
    clique = {"CLIQUE_ID": "0e5f3b36-7c21-4a53-9b8e-6a2f1c0d4e55.1"}
    for ctl, expected in ((str(ready), 0), ("/bin/false", 1), ("/nonexistent/ctl", 1)):
        _, code, loaded = loaded_by_check(["-v", "2", *argv], {**clique, "IMEX_CTL_BINARY": ctl})
        assert code == expected
        assert loaded == {"heavy": [], "package": PROBE_MODULES, "other": []}
