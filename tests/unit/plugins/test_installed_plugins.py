"""The example plugins in ``plugins/`` load through their entry points in the project's venv.

``make venv`` installs every ``plugins/*`` next to the package; these tests check that each one
is a complete distribution (its own pyproject, an entry point in the ``computedomain`` group,
a README saying how to select it, tests that ``make test`` collects) and that
``registry.load()`` finds the policy it provides. Loading in a fresh environment, one plugin
at a time, is ``tests/integration/plugins/test_fresh_install.py``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import tomllib
from pathlib import Path
from typing import Any

import pytest

from computedomain.policies import registry
from tests.unit.packaging import project

# folder -> (distribution, catalog, policy name, how the README says to select it)
EXAMPLES = {
    "index-stablehash": (
        "computedomain-index-stablehash",
        "index",
        "stable-hash",
        "INDEX_POLICY=stable-hash",
    ),
    "dns-suffix": ("computedomain-dns-suffix", "dns_names", "suffix", "DNS_NAME_POLICY=suffix"),
    "channels-per-domain": (
        "computedomain-channels-per-domain",
        "channels",
        "per-domain",
        "CHANNEL_STRATEGY_MAP=Single=per-domain",
    ),
}


def metadata(folder: str) -> dict[str, Any]:
    with (project.PLUGINS / folder / "pyproject.toml").open("rb") as f:
        result: dict[str, Any] = tomllib.load(f)["project"]
    return result


def test_every_plugin_folder_is_one_of_the_examples() -> None:
    assert sorted(p.name for p in project.plugin_dirs()) == sorted(EXAMPLES)


@pytest.mark.parametrize("folder", sorted(EXAMPLES))
def test_the_folder_is_a_complete_distribution(folder: str) -> None:
    distribution, _, _, selection = EXAMPLES[folder]
    meta = metadata(folder)
    assert meta["name"] == distribution
    assert list(meta["entry-points"]["computedomain"]) == [folder]
    assert any(d.startswith("computedomain") for d in meta["dependencies"])
    readme = (project.PLUGINS / folder / "README.md").read_text()
    assert selection in readme
    tests = sorted((project.PLUGINS / folder / "tests").glob("test_*.py"))
    assert tests
    assert "plugins" in project.pyproject()["tool"]["pytest"]["ini_options"]["testpaths"]


def test_plugin_test_modules_have_distinct_names() -> None:
    # The plugin test folders are not packages, so pytest imports their modules by file name.
    names = [t.name for t in project.PLUGINS.glob("*/tests/*.py")]
    assert len(names) == len(set(names))
    assert not list(project.PLUGINS.glob("*/tests/__init__.py"))


@pytest.mark.parametrize("folder", sorted(EXAMPLES))
def test_the_installed_entry_point_is_the_one_in_the_folder(folder: str) -> None:
    distribution, _, _, _ = EXAMPLES[folder]
    installed = importlib.metadata.distribution(distribution)
    assert installed.version == metadata(folder)["version"]
    (entry_point,) = [e for e in installed.entry_points if e.group == "computedomain"]
    assert entry_point.name == folder
    module = entry_point.load().__class__.__module__
    source = Path(importlib.import_module(module).__file__ or "")
    assert source.is_relative_to(project.PLUGINS / folder)  # editable: this checkout's code


@pytest.mark.parametrize("folder", sorted(EXAMPLES))
def test_registry_load_lists_the_plugins_policy(folder: str) -> None:
    _, catalog, name, _ = EXAMPLES[folder]
    policies = registry.load()
    assert name in getattr(policies, catalog).names()
    assert getattr(policies, catalog).get(name).name == name


def test_without_entry_points_only_the_builtins_remain() -> None:
    policies = registry.load(entry_points=False)
    assert policies.index.names() == ["lowest-free"]
    assert policies.dns_names.names() == ["upstream"]
    assert policies.channels.names() == ["All", "Single"]
