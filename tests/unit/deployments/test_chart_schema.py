"""The chart passes ``helm lint`` and its schema refuses bad values by name: an unknown key
(a misspelling), a wrong type, a value outside its set. The schema and values.yaml name the
same values, and docs/helm-values.md documents each of them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from .chart import CHART, REPO, helm, values_file

SCHEMA: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
DEFAULTS: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())


def test_helm_lint_passes_with_the_defaults_and_every_ci_values_file() -> None:
    helm("lint", "--strict", str(CHART))
    for values in sorted((CHART / "ci").glob("*-values.yaml")):
        helm("lint", "--strict", str(CHART), f"--values={values}")


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"controller": {"replica": 2}}, ["/controller", "replica"]),
        ({"imagePullSecret": []}, ["imagePullSecret"]),
        ({"kubeletPlugin": {"containers": {"computeDomain": {}}}}, ["computeDomain"]),
        ({"controller": {"replicas": "two"}}, ["/controller/replicas", "integer"]),
        ({"controller": {"leaderElection": {"enabled": "yes"}}},
         ["/controller/leaderElection/enabled"]),
        ({"featureGates": {"ComputeDomainCliques": "off"}}, ["/featureGates/ComputeDomainCliques"]),
        ({"image": {"pullPolicy": "Sometimes"}}, ["/image/pullPolicy"]),
        ({"namespace": {"name": "Not_A_Name"}}, ["/namespace/name"]),
        ({"controller": {"leaderElection": {"leaseDuration": "15"}}},
         ["/controller/leaderElection/leaseDuration"]),
        ({"kubeletPlugin": {"metrics": {"computeDomainHttpEndpoint": "localhost"}}},
         ["/kubeletPlugin/metrics/computeDomainHttpEndpoint"]),
        ({"nvidiaDriverRoot": "run/nvidia/driver"}, ["/nvidiaDriverRoot"]),
        ({"daemon": {"env": {"A": 1}}}, ["/daemon/env/A"]),
        ({"resources": {"computeDomains": {"imex": {"mode": "HostManaged"}}}},
         ["/resources/computeDomains/imex/mode", "driverManaged", "hostManaged"]),
        ({"resources": {"computeDomains": {"imex": {"isolation": "IMEXDomain"}}}},
         ["/resources/computeDomains/imex/isolation"]),
        ({"resources": {"computeDomains": {"imex": {"hostSocketPath": "imex_ctrl.sock"}}}},
         ["/resources/computeDomains/imex/hostSocketPath"]),
        ({"resources": {"computeDomains": {"enabled": True}}},
         ["/resources/computeDomains", "enabled"]),
    ],
)  # fmt: skip
def test_a_bad_value_is_refused_naming_the_field(
    values: dict[str, Any], named: list[str], tmp_path: Path
) -> None:
    path = values_file(tmp_path, values)
    for command in (["template", "x"], ["lint"], ["install", "x", "--dry-run=client"]):
        result = helm(*command, str(CHART), f"--values={path}", check=False)
        assert result.returncode != 0, command
        output = result.stderr + result.stdout
        for word in named:
            assert word in output, (command, output)


def schema_paths(node: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """The values the schema describes: a node with a description is one value (even a
    mapping, such as resources); one without groups the values below it."""
    for key, sub in node.get("properties", {}).items():
        path = f"{prefix}{key}"
        if "description" in sub:
            yield path
        else:
            yield from schema_paths(sub, f"{path}.")


def value_paths(
    tree: Mapping[str, Any], schema: Mapping[str, Any], prefix: str = ""
) -> Iterator[str]:
    """The values of values.yaml, down to the schema's values."""
    for key, value in tree.items():
        path = f"{prefix}{key}"
        sub = schema.get("properties", {}).get(key, {})
        if isinstance(value, Mapping) and "description" not in sub:
            yield from value_paths(value, sub, f"{path}.")
        else:
            yield path


def test_values_yaml_and_the_schema_name_the_same_values() -> None:
    assert sorted(value_paths(DEFAULTS, SCHEMA)) == sorted(schema_paths(SCHEMA))


def test_every_object_of_the_schema_refuses_unknown_keys() -> None:
    def closed(node: Mapping[str, Any], path: str) -> Iterator[str]:
        if "properties" in node and node.get("additionalProperties") is not False:
            yield path or "(top)"
        for key, sub in node.get("properties", {}).items():
            yield from closed(sub, f"{path}.{key}")

    assert list(closed(SCHEMA, "")) == []


def test_the_values_document_lists_every_value() -> None:
    text = (REPO / "docs" / "helm-values.md").read_text()
    missing = [p for p in schema_paths(SCHEMA) if f"`{p}`" not in text]
    assert missing == []
