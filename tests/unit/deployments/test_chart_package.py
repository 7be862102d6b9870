"""``helm package`` makes the chart an operator installs: its templates, CRDs, values and
schema, without the ``ci/`` values files, rendering what the directory renders; its version is
the package's."""

from __future__ import annotations

import tarfile
import tomllib
from pathlib import Path

import yaml

from .chart import CHART, REPO, helm, render


def test_the_package_holds_the_chart_without_its_ci_values(tmp_path: Path) -> None:
    helm("package", str(CHART), f"--destination={tmp_path}")
    (package,) = tmp_path.glob("computedomain-*.tgz")
    with tarfile.open(package) as archive:
        names = set(archive.getnames())
    for member in ("Chart.yaml", "values.yaml", "values.schema.json", "templates/NOTES.txt"):
        assert f"computedomain/{member}" in names
    for crd in (CHART / "crds").iterdir():
        assert f"computedomain/crds/{crd.name}" in names
    assert not [n for n in names if "/ci/" in n]
    assert render() == render_package(package)


def render_package(package: Path) -> dict[tuple[str, str], dict[str, object]]:
    out = helm("template", "computedomain", str(package), "--include-crds").stdout
    return {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(out) if o}


def test_the_chart_version_is_the_packages() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert chart["version"] == chart["appVersion"] == project["version"]
