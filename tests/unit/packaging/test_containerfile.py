"""The Containerfile read as text: what the built image cannot show.

A base pinned by exact tag and digest (a build where the registry is unreachable uses a local
stand-in, so the image does not show the pin), OCI labels that agree with pyproject.toml, a build
stage that makes the wheel and installs it with the constraints, a final stage that takes only
the environment and the launchers, and a build context (.containerignore) that holds every
copied source and none of the local state, tests or the simulation. What the image does (its
programs, contents, user, a controller reconciling a cluster) is tested on the built image by
``tests/image`` (`make test-image`).
"""

from __future__ import annotations

import os
import re

import pytest

from tests.unit.packaging import containerfile, project

RECIPE = containerfile.parse((project.ROOT / "Containerfile").read_text())
IGNORE = containerfile.ignore_patterns((project.ROOT / ".containerignore").read_text())
PINNED = re.compile(
    r"(?P<name>[a-z0-9./-]+):(?P<tag>\d+\.\d+\.\d+[a-z0-9.-]*)@(?P<digest>sha256:[0-9a-f]{64})"
)
VENV = "/opt/computedomain/venv"


def local_copies() -> list[tuple[str, list[str]]]:
    """(stage, sources) of every COPY from the build context."""
    result = []
    for stage in RECIPE.stages:
        for copy in stage.all("COPY"):
            if "from" not in copy.flags():
                result.append((stage.name or "final", copy.operands()[:-1]))
    return result


def test_every_stage_starts_from_a_base_pinned_by_exact_tag_and_digest() -> None:
    assert len(RECIPE.stages) >= 2
    for stage in RECIPE.stages:
        assert PINNED.fullmatch(stage.base), stage.base
    assert len({stage.base for stage in RECIPE.stages}) == 1  # the venv's interpreter path


def test_the_labels_name_the_pinned_base() -> None:
    pinned = PINNED.fullmatch(RECIPE.final.base)
    assert pinned is not None
    labels = RECIPE.final.labels()
    assert labels["org.opencontainers.image.base.digest"] == pinned["digest"]
    assert labels["org.opencontainers.image.base.name"].endswith(
        f"{pinned['name']}:{pinned['tag']}"
    )


def test_the_oci_labels_agree_with_pyproject() -> None:
    meta = project.pyproject()["project"]
    labels = RECIPE.final.labels()
    args = RECIPE.final.args()
    assert labels["org.opencontainers.image.title"] == meta["name"]
    assert labels["org.opencontainers.image.description"] == meta["description"]
    assert labels["org.opencontainers.image.licenses"] == meta["license"]
    assert labels["org.opencontainers.image.version"] == "${VERSION}"
    assert args["VERSION"] == project.version()
    for key in ("source", "revision"):
        assert f"org.opencontainers.image.{key}" in labels


def test_the_build_stage_makes_a_wheel_and_installs_it_with_the_constraints() -> None:
    build = RECIPE.stages[0]
    assert build.name == "build"
    runs = " ".join(run.text for run in build.all("RUN"))
    assert "pip wheel --no-deps" in runs
    assert f"venv --without-pip {VENV}" in runs
    assert f"--python {VENV}/bin/python install" in runs
    assert "--constraint constraints.txt /wheels/*.whl" in runs
    assert "--only-binary=:all:" in runs  # nothing is compiled, even in the build stage


def test_every_copied_source_exists_and_is_in_the_build_context() -> None:
    files = project.repository_files()
    copies = local_copies()
    assert copies
    for stage, sources in copies:
        for source in sources:
            path = project.ROOT / source
            assert path.exists(), f"{stage}: COPY {source}: no such file in the repository"
            inside = [f for f in files if f == source.rstrip("/") or f.startswith(source)]
            kept = [f for f in inside if not containerfile.ignored(IGNORE, f)]
            assert kept, f"{stage}: COPY {source}: .containerignore leaves nothing of it"


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "constraints.txt",
        "README.md",
        "computedomain/__init__.py",
        "computedomain/py.typed",
        "computedomain/api/names.py",
        "bin/cd-controller",
        "plugins/dns-suffix/pyproject.toml",
        "plugins/dns-suffix/README.md",
    ],
)
def test_what_the_wheels_need_is_in_the_build_context(path: str) -> None:
    assert (project.ROOT / path).exists()
    assert not containerfile.ignored(IGNORE, path)


@pytest.mark.parametrize(
    "path",
    [
        ".venv/bin/python",
        ".git/HEAD",
        "computedomain/__pycache__/x.pyc",
        "tests/conftest.py",
        "sim/computedomain_sim/__init__.py",
    ],
)
def test_local_state_and_tests_stay_out_of_the_build_context(path: str) -> None:
    assert containerfile.ignored(IGNORE, path)


def test_no_package_file_is_left_out_of_the_build_context() -> None:
    package = [f for f in project.repository_files() if f.startswith("computedomain/")]
    assert [f for f in package if containerfile.ignored(IGNORE, f)] == []


def test_the_final_stage_copies_only_the_environment_from_the_build_stage() -> None:
    final = RECIPE.final
    staged = [c for c in final.all("COPY") if "from" in c.flags()]
    assert [(c.flags()["from"], c.operands()) for c in staged] == [("build", [VENV, VENV])]
    names = [s.name for s in RECIPE.stages[:-1]]
    assert all(c.flags()["from"] in names for c in staged)


def test_the_launchers_are_copied_and_on_the_path_after_the_environment() -> None:
    copies = dict(local_copies())
    assert copies["final"] == ["bin/"]
    env = " ".join(e.text for e in RECIPE.final.all("ENV"))
    path = re.search(r"PATH=(\S+)", env)
    assert path is not None
    entries = path.group(1).split(":")
    assert entries.index(f"{VENV}/bin") < entries.index("/opt/computedomain/bin")
    assert f"COMPUTEDOMAIN_PYTHON={VENV}/bin/python" in env


def test_every_launcher_the_image_ships_is_executable() -> None:
    for name in [*project.scripts(), *project.ALIASES]:
        launcher = project.BIN / name
        assert launcher.is_file(), f"bin/{name} is missing"
        assert os.access(launcher, os.X_OK), f"bin/{name} is not executable"
        assert launcher.read_text().startswith("#!/bin/sh\n")


def test_plugins_named_by_the_build_argument_are_folders_with_a_pyproject() -> None:
    build = RECIPE.stages[0]
    assert "PLUGINS" in build.args()
    runs = " ".join(run.text for run in build.all("RUN"))
    assert '"plugins/${plugin}"' in runs
    assert len(project.plugin_dirs()) >= 3


def test_the_docker_ignore_file_is_the_same_as_the_containerignore() -> None:
    ignore = (project.ROOT / ".containerignore").read_text()
    assert (project.ROOT / ".dockerignore").read_text() == ignore


def test_the_reader_joins_continuations_and_substitutes_global_args() -> None:
    recipe = containerfile.parse(
        "ARG BASE=img:1.2.3@sha256:" + "0" * 64 + "\n"
        "# a comment\n"
        "FROM ${BASE} AS build\n"
        "RUN a \\\n"
        "    # inside\n"
        " && b\n"
        "FROM $BASE\n"
        'LABEL x="one two" y=3\n'
    )
    assert [s.name for s in recipe.stages] == ["build", None]
    assert recipe.stages[0].base == recipe.final.base == "img:1.2.3@sha256:" + "0" * 64
    assert recipe.stages[0].all("RUN")[0].text == "a && b"
    assert recipe.final.labels() == {"x": "one two", "y": "3"}


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/build", "computedomain/x/build/y.py", True),
        ("**/build", "computedomain/build.py", False),
        ("plugins/*/tests", "plugins/a/tests/test_x.py", True),
        ("plugins/*/tests", "plugins/a/a_tests.py", False),
        (".git", ".github/x", False),
    ],
)
def test_the_reader_matches_ignore_patterns(pattern: str, path: str, expected: bool) -> None:
    assert containerfile.ignored([pattern], path) is expected
    assert containerfile.ignored([pattern, f"!{path}"], path) is False
