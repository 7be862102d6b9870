"""What the image holds and how it runs by default: the package and exactly the plugins named at
build time, nothing of the simulated cluster, no pip nor the build stage's tools, and
the unprivileged user (65532) as the default user."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest

from tests.unit.packaging import project

from .conftest import Image, run_in

VENV = "/opt/computedomain/venv"
# Run in the image: every installed distribution of its environment with the files it installed.
LIST_DISTRIBUTIONS = """\
import json, importlib.metadata as m
print(json.dumps({d.metadata["Name"]: {"version": d.version,
                  "files": [str(f) for f in (d.files or ())]} for d in m.distributions()}))
"""


@pytest.fixture(scope="module")
def distributions(container: str) -> dict[str, Any]:
    listed = run_in(container, f"{VENV}/bin/python", "-c", LIST_DISTRIBUTIONS)
    assert listed.returncode == 0, listed.stderr
    found: dict[str, Any] = json.loads(listed.stdout)
    return {project.canonical(name): value for name, value in found.items()}


def test_the_package_is_installed_at_the_projects_version(distributions: dict[str, Any]) -> None:
    package = distributions["computedomain"]
    assert package["version"] == project.version()
    assert "computedomain/controller/main.py" in package["files"]


def test_the_dependencies_are_the_pinned_ones(distributions: dict[str, Any]) -> None:
    pins = project.constraints()
    ours = {name for name in distributions if name.startswith("computedomain")}
    for name, value in distributions.items():
        if name not in ours:
            assert pins.get(name) == value["version"], name


def test_nothing_of_the_simulation_is_installed(
    container: str, distributions: dict[str, Any]
) -> None:
    assert "computedomain-sim" not in distributions
    files = [f for value in distributions.values() for f in value["files"]]
    assert files
    assert [f for f in files if f.startswith(("computedomain/sim/", "computedomain_sim"))] == []
    found = run_in(
        container, "find", "/", "-xdev", "(", "-path", "*/computedomain/sim",
        "-o", "-name", "computedomain_sim*", ")", "-print",
        options=("--user=0:0",),  # every directory readable
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert found.stdout == ""


def test_exactly_the_named_plugins_are_installed(
    image: Image, distributions: dict[str, Any]
) -> None:
    named = set()
    for plugin in image.plugins:
        meta = tomllib.loads((project.PLUGINS / plugin / "pyproject.toml").read_text())
        named.add(project.canonical(meta["project"]["name"]))
    installed = {name for name in distributions if name.startswith("computedomain-")}
    assert installed == named


def test_no_pip_and_nothing_of_the_build_stage(
    container: str, distributions: dict[str, Any]
) -> None:
    assert not {"pip", "setuptools", "wheel"} & set(distributions)
    for python in ("python", f"{VENV}/bin/python"):
        assert run_in(container, python, "-m", "pip", "--version").returncode != 0
    assert run_in(container, "test", "-e", "/opt/build-tools").returncode != 0
    compilers = run_in(container, "sh", "-c", "command -v gcc cc g++ make || true")
    assert compilers.stdout == ""


def test_the_default_user_is_unprivileged(image: Image, container: str) -> None:
    assert image.config["User"] == "65532:65532"
    who = run_in(container, "id", "-u")
    assert who.returncode == 0, who.stderr
    assert who.stdout.strip() == "65532"
    root_owned = run_in(container, "touch", f"{VENV}/written")
    assert root_owned.returncode != 0
