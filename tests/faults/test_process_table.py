"""The fault runs find the components' processes by command line: through the ``bin/``
launchers, the console scripts and the stand-in's wrapper."""

from __future__ import annotations

import pytest

from computedomain.api import names
from tests.faults.sim import running_program

CODE = "import importlib, sys\n..."


@pytest.mark.parametrize(
    ("args", "program"),
    [
        (["python", "-P", "-c", CODE, "computedomain.controller.main", "/r/bin/cd-controller"],
         "cd-controller"),
        (["python", "-P", "-c", CODE, "computedomain.kubeletplugin.main",
          "/r/bin/cd-kubelet-plugin", "-v", "4"], "cd-kubelet-plugin"),
        (["python", "-P", "-c", CODE, "computedomain.daemon.main", "/r/bin/cd-imex-daemon",
          "-v", "4", "run"], "cd-imex-daemon"),
        (["/venv/bin/python", "/venv/bin/cd-imex-daemon", "run"], "cd-imex-daemon"),
        (["python", "-m", "computedomain_sim.imex.daemon", "-c", "/imexd/imexd.cfg"],
         names.IMEX_BINARY),
    ],
    ids=["controller", "plugin", "daemon", "console-script", "imex-stand-in"],
)  # fmt: skip
def test_each_way_a_component_runs_is_recognised(args: list[str], program: str) -> None:
    assert running_program(args, program)


def test_a_stand_in_is_not_its_daemon_and_a_daemon_not_its_stand_in() -> None:
    stand_in = ["python", "-m", "computedomain_sim.imex.daemon", "-c", "/imexd/imexd.cfg"]
    daemon = ["python", "-P", "-c", CODE, "computedomain.daemon.main", "/r/bin/cd-imex-daemon",
              "run"]  # fmt: skip
    assert not running_program(stand_in, "cd-imex-daemon")
    assert not running_program(daemon, names.IMEX_BINARY)
