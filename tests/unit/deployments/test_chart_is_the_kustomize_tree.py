"""The chart and deployments/ are one install: the chart's templates and CRDs are what ``make
chart`` generates from the base today, the default values render exactly the base's objects,
and each values file in the chart's ``ci/`` renders exactly its overlay. Helm's own labels
(release, chart version) are the only addition."""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from computedomain_sim.cluster import kustomize

from .chart import CHART, DEPLOYMENTS, REPO, render, without_release_labels

GENERATOR = DEPLOYMENTS / "helm" / "generator"
OVERLAYS = ["leader-election", "gpu-operator", "sim", "host-managed"]


def kustomized(directory: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in kustomize.render_builtin(directory)}


def generate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATOR), *args], capture_output=True, text=True, check=False
    )


def test_the_committed_chart_is_what_make_chart_generates(tmp_path: Path) -> None:
    fresh = tmp_path / "chart"
    result = generate(f"--chart={fresh}")
    assert result.returncode == 0, result.stderr
    for folder in ("templates", "crds"):
        generated = sorted(p.name for p in (fresh / folder).iterdir())
        committed = sorted(p.name for p in (CHART / folder).glob("*.yaml"))
        assert generated == committed, f"{folder}: run `make chart`"
        _, mismatch, errors = filecmp.cmpfiles(fresh / folder, CHART / folder, generated, False)
        assert mismatch + errors == [], f"{folder}: stale, run `make chart`"


def test_the_crds_are_the_bases_byte_for_byte() -> None:
    for crd in (CHART / "crds").iterdir():
        assert crd.read_bytes() == (DEPLOYMENTS / "base" / "crds" / crd.name).read_bytes()


def test_the_default_values_render_the_base() -> None:
    assert without_release_labels(render()) == kustomized(DEPLOYMENTS / "base")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_ci_values_file_renders_its_overlay(overlay: str) -> None:
    values = CHART / "ci" / f"{overlay}-values.yaml"
    rendered = without_release_labels(render(f"--values={values}"))
    assert rendered == kustomized(DEPLOYMENTS / "overlays" / overlay)


def test_every_overlay_has_its_values_file() -> None:
    overlays = sorted(p.name for p in (DEPLOYMENTS / "overlays").iterdir() if p.is_dir())
    assert overlays == sorted(OVERLAYS)


def test_a_base_with_a_transformer_the_chart_cannot_carry_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "base"
    shutil.copytree(DEPLOYMENTS / "base", base)
    with (base / "kustomization.yaml").open("a") as f:
        f.write("commonLabels: {team: gpu}\n")
    result = generate(f"--base={base}", f"--chart={tmp_path / 'chart'}")
    assert result.returncode == 1
    assert "commonLabels" in result.stderr


def test_a_base_that_lost_a_parameterised_field_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "base"
    shutil.copytree(DEPLOYMENTS / "base", base)
    plugin = base / "kubelet-plugin.yaml"
    plugin.write_text(plugin.read_text().replace("name: NVIDIA_DRIVER_ROOT", "name: DRIVER_ROOT"))
    result = generate(f"--base={base}", f"--chart={tmp_path / 'chart'}")
    assert result.returncode == 1
    assert "NVIDIA_DRIVER_ROOT" in result.stderr
    assert not (tmp_path / "chart").exists(), "nothing is written from a base it cannot carry"


def test_the_generator_runs_from_any_directory(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(GENERATOR.relative_to(REPO)), f"--chart={tmp_path / 'c'}"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "c" / "templates" / "controller.yaml").is_file()
