"""The wheel, installed into a fresh virtual environment, runs; each plugin loads there alone.

What the image's build stage does, without a container engine: build wheels from exactly the
files the Containerfile copies into its build stage, install the package's wheel into a new
environment next to its pinned dependencies, and run every program (its console script, its
``bin/`` launcher and upstream's alias) with ``--version``. Then each example plugin's wheel is
installed beside it on its own (unpacked into a directory of its own on ``PYTHONPATH``), and
``registry.load()`` in that environment must list the builtins plus that plugin's policy and
nothing else.

Dependencies are not downloaded (CI must not depend on an index being fast or reachable, and a
full resolve takes minutes here): the fresh environment sees, through one ``.pth`` file, links
to exactly the distributions in the *runtime* dependency closure of the built wheel (its
``Requires-Dist``, followed transitively, extras excluded), taken from the project's venv, which
``make venv`` installed from ``constraints.txt``. So a dependency the code imports but the
wheel does not declare fails here, every version is checked against its pin, and ``pip check``
must find nothing broken.

Programs whose ``main`` module is not in this source tree yet are left out of the
parametrisation by ``programs_present()``; each is checked as soon as it lands (the
Containerfile's smoke test needs them all).
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import pytest
from packaging.requirements import Requirement

from tests.unit.packaging import containerfile, project

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("fresh-install")]

PLUGIN_POLICIES = {  # folder -> (catalog, policy name)
    "index-stablehash": ("index", "stable-hash"),
    "dns-suffix": ("dns_names", "suffix"),
    "channels-per-domain": ("channels", "per-domain"),
}
BUILTINS = {"index": ["lowest-free"], "dns_names": ["upstream"], "channels": ["All", "Single"]}
LOAD = """
import importlib.metadata, json, computedomain
from computedomain.policies import registry
policies = registry.load()
print(json.dumps({
    "index": policies.index.names(),
    "dns_names": policies.dns_names.names(),
    "channels": policies.channels.names(),
    "entry_points": sorted(e.name for e in importlib.metadata.entry_points(group="computedomain")),
    "package": computedomain.__file__,
}))
"""


@attrs.frozen
class Fresh:
    """The fresh environment and the wheels built for it."""

    root: Path
    python: Path
    wheels: dict[str, Path]  # "computedomain" or plugin folder -> wheel
    overlays: dict[str, Path]  # plugin folder -> directory it is installed into, alone
    closure: tuple[importlib.metadata.Distribution, ...]
    check: str  # what `pip check` said about the environment


def run(
    argv: list[str | Path], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` to completion; a non-zero exit fails the test with its output."""
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{argv}: {done.stdout}\n{done.stderr}"
    return done


def pip(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args])


def copy_build_context(target: Path) -> None:
    """Copy what the build stage's COPY lines take, minus what .containerignore leaves out."""
    recipe = containerfile.parse((project.ROOT / "Containerfile").read_text())
    ignore = containerfile.ignore_patterns((project.ROOT / ".containerignore").read_text())
    sources = [s for copy in recipe.stage("build").all("COPY") for s in copy.operands()[:-1]]
    for path in project.repository_files():
        if any(path == s or path.startswith(s) for s in sources) and not containerfile.ignored(
            ignore, path
        ):
            (target / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(project.ROOT / path, target / path)


def build_wheels(context: Path, out: Path) -> dict[str, Path]:
    """One ``pip wheel`` for the package and every plugin; offline, with the venv's setuptools."""
    folders = sorted(PLUGIN_POLICIES)
    pip(
        "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir", out,
        context, *(context / "plugins" / f for f in folders),
    )  # fmt: skip
    wheels = {"computedomain": next(out.glob("computedomain-*.whl"))}
    for folder in folders:
        distribution = f"computedomain_{folder.replace('-', '_')}"
        wheels[folder] = next(out.glob(f"{distribution}-*.whl"))
    return wheels


def requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = email.parser.Parser().parsestr(archive.read(name).decode())
    return message.get_all("Requires-Dist") or []


def runtime_closure(requirements: list[str]) -> tuple[importlib.metadata.Distribution, ...]:
    """The installed distributions the requirements need, transitively; extras excluded."""
    found: dict[str, importlib.metadata.Distribution] = {}
    queue = [Requirement(r) for r in requirements]
    while queue:
        requirement = queue.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = project.canonical(requirement.name)
        if name in found:
            continue
        dist = importlib.metadata.distribution(requirement.name)
        assert requirement.specifier.contains(dist.version, prereleases=True), requirement
        found[name] = dist
        queue.extend(Requirement(r) for r in dist.requires or [])
    return tuple(found[n] for n in sorted(found))


def link_closure(closure: tuple[importlib.metadata.Distribution, ...], farm: Path) -> None:
    """Link each distribution's top-level files (packages, modules, dist-info) into ``farm``."""
    farm.mkdir()
    for dist in closure:
        assert dist.files is not None, f"{dist.metadata['Name']} has no RECORD"
        site = Path(str(dist.locate_file("")))
        for top in {f.parts[0] for f in dist.files if f.parts[0] not in ("..", "__pycache__")}:
            if (site / top).exists() and not (farm / top).exists():
                (farm / top).symlink_to(site / top)


def unpack_pure_wheel(wheel: Path, target: Path) -> None:
    """Install a pure-Python wheel without scripts into ``target``: that is, unpack it.

    (What pip does for such a wheel, minus its bookkeeping; three pip runs cost ~10 s here.)
    """
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        assert "Root-Is-Purelib: true" in archive.read(info).decode()
        assert not [n for n in names if ".data/" in n]
        archive.extractall(target)


def site_packages(python: Path) -> Path:
    return Path(
        run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
        ).stdout.strip()
    )


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Fresh:
    root = tmp_path_factory.mktemp("fresh-install")
    copy_build_context(root / "context")
    with ThreadPoolExecutor(max_workers=4) as pool:
        venv = pool.submit(run, [sys.executable, "-m", "venv", "--without-pip", root / "venv"])
        wheels = build_wheels(root / "context", root / "wheels")
        venv.result()
    python = root / "venv" / "bin" / "python"
    closure = runtime_closure(requires(wheels["computedomain"]))
    link_closure(closure, root / "deps")
    (site_packages(python) / "computedomain_deps.pth").write_text(f"{root / 'deps'}\n")
    install = ("--python", python, "install", "--no-deps", "--no-index", "--no-compile")
    pip(*install, wheels["computedomain"])
    overlays = {folder: root / "overlays" / folder for folder in PLUGIN_POLICIES}
    for folder, target in overlays.items():
        unpack_pure_wheel(wheels[folder], target)
    check = pip("--python", python, "check").stdout
    return Fresh(root, python, wheels, overlays, closure, check)


def programs_present() -> list[str]:
    return [
        name for name, target in sorted(project.scripts().items()) if project.module_exists(target)
    ]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return env | extra


def test_the_environment_holds_the_wheel_and_only_pinned_runtime_dependencies(
    fresh: Fresh,
) -> None:
    pins = project.constraints()
    for dist in fresh.closure:
        name = project.canonical(dist.metadata["Name"])
        assert pins.get(name) == dist.version, f"{name} {dist.version} is not the pinned one"
    names = {project.canonical(d.metadata["Name"]) for d in fresh.closure}
    assert {"pytest", "hypothesis", "mypy", "ruff"}.isdisjoint(names)  # no dev extras
    where = run([fresh.python, "-c", "import computedomain; print(computedomain.__file__)"],
                cwd=fresh.root, env=clean_env()).stdout  # fmt: skip
    assert Path(where.strip()).is_relative_to(fresh.root / "venv")
    assert "No broken requirements found" in fresh.check


def test_the_wheel_carries_the_typed_marker_and_no_tests(fresh: Fresh) -> None:
    with zipfile.ZipFile(fresh.wheels["computedomain"]) as archive:
        names = archive.namelist()
    assert "computedomain/py.typed" in names
    assert not [n for n in names if n.startswith(("tests/", "plugins/", "bin/"))]


@pytest.mark.parametrize("name", programs_present())
def test_every_program_reports_the_version_by_each_of_its_names(fresh: Fresh, name: str) -> None:
    env = clean_env(COMPUTEDOMAIN_PYTHON=str(fresh.python))
    commands = [[fresh.root / "venv" / "bin" / name], [project.BIN / name]]
    commands += [
        [project.BIN / alias] for alias, target in project.ALIASES.items() if target == name
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        outputs = list(
            pool.map(lambda argv: run([*argv, "--version"], cwd=fresh.root, env=env), commands)
        )
    assert [o.stdout.strip() for o in outputs] == [project.version()] * len(commands)


def test_the_computedomain_command_is_always_among_the_checked_programs() -> None:
    assert "computedomain" in programs_present()


def load(fresh: Fresh, pythonpath: Path | None) -> dict[str, list[str] | str]:
    env = clean_env(**({"PYTHONPATH": str(pythonpath)} if pythonpath else {}))
    result: dict[str, list[str] | str] = json.loads(
        run([fresh.python, "-c", LOAD], cwd=fresh.root, env=env).stdout
    )
    return result


def test_without_plugins_only_the_builtins_are_registered(fresh: Fresh) -> None:
    loaded = load(fresh, None)
    assert loaded["entry_points"] == []
    assert {k: loaded[k] for k in BUILTINS} == BUILTINS


@pytest.mark.parametrize("folder", sorted(PLUGIN_POLICIES))
def test_each_plugin_alone_loads_through_its_entry_point(fresh: Fresh, folder: str) -> None:
    catalog, name = PLUGIN_POLICIES[folder]
    loaded = load(fresh, fresh.overlays[folder])
    assert loaded["entry_points"] == [folder]
    expected = {k: sorted([*v, name]) if k == catalog else v for k, v in BUILTINS.items()}
    assert {k: loaded[k] for k in BUILTINS} == expected
    assert Path(str(loaded["package"])).is_relative_to(fresh.root / "venv")
