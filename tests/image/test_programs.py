"""The image's programs and upstream's names for them start under ``buildah run`` and answer
``--version`` (the package's version) and ``--help``."""

from __future__ import annotations

import pytest

from tests.unit.packaging import project

from .conftest import run_in

NAMES = sorted([*project.scripts(), *project.ALIASES])


@pytest.mark.parametrize("name", NAMES)
def test_answers_version_and_help(container: str, name: str) -> None:
    version = run_in(container, name, "--version")
    assert version.returncode == 0, version.stderr
    assert project.version() in version.stdout
    helped = run_in(container, name, "--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.lower().startswith("usage:"), helped.stdout
