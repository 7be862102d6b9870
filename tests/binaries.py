"""Where the tests find kubectl, helm and the conformance corpus's client-go program
(cd-conformance-client): `make venv` installs them, at pinned versions, into the virtual
environment's bin folder beside the interpreter that runs the tests (.ci/kube_tools.py; the
program is built from sim/controlplane's Go module). They are part of the dev install, so a
test that needs one fails, never skips, when it is missing."""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

import pytest

BIN = Path(sysconfig.get_path("scripts"))


def path(name: str) -> str:
    """The installed ``name`` (kubectl, helm, cd-conformance-client); fails the test when it
    is not installed."""
    program = BIN / name
    if not os.access(program, os.X_OK):
        pytest.fail(f"{program} is missing: `make venv` installs it", pytrace=False)
    return str(program)


def kubectl() -> str:
    """The installed kubectl."""
    return path("kubectl")


def helm() -> str:
    """The installed helm."""
    return path("helm")


def search_path() -> str:
    """PATH with the bin folder first, for code that looks kubectl up itself."""
    return os.pathsep.join([str(BIN), os.environ.get("PATH", "/usr/bin:/bin")])
