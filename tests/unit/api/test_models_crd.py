"""The attrs models and the CRD schemas in deployments/ describe the same objects, both ways."""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from computedomain.api import models
from computedomain.api.convert import _wire_name

CRD_DIR = Path(__file__).parents[3] / "deployments" / "base" / "crds"


def _schema(file: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRD_DIR / file).read_text())
    (version,) = crd["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"])


# Kubernetes never lists these as required at the root of a CRD schema, but our models cannot
# act on an object without them: decoding such an object fails and the component reports it.
ROOT_FIELDS_WE_REQUIRE = frozenset(
    {"ComputeDomain.metadata", "ComputeDomain.spec", "ComputeDomainClique.metadata"}
)


def _strip_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        assert len(args) == 1, tp
        return args[0]
    return tp


def _check(cls: type[Any], schema: Mapping[str, Any], path: str, problems: list[str]) -> None:
    """Compare one attrs class with one object schema, recursively, collecting mismatches."""
    hints = typing.get_type_hints(cls)
    props: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    seen: set[str] = set()
    for field in attrs.fields(cls):
        key = _wire_name(field)
        seen.add(key)
        where = f"{path}.{key}"
        if key not in props:
            problems.append(f"{where}: model field missing from the CRD")
            continue
        prop = props[key]
        has_default = field.default is not attrs.NOTHING
        if not has_default and key not in required and where not in ROOT_FIELDS_WE_REQUIRE:
            problems.append(f"{where}: required in the model, optional in the CRD")
        if key in required and field.metadata.get("omit") != models.OMIT_NEVER:
            problems.append(f"{where}: required in the CRD but the model may omit it")
        if has_default and "default" in prop and field.default is not None:
            default = field.default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = default.factory()  # type: ignore[attr-defined]
            if default != prop["default"]:
                problems.append(f"{where}: default {default!r} != CRD {prop['default']!r}")
        _check_type(_strip_optional(hints[field.name]), prop, where, problems)
    for key in props:
        if key not in seen:
            problems.append(f"{path}.{key}: CRD field missing from the model")


def _check_type(tp: Any, prop: Mapping[str, Any], where: str, problems: list[str]) -> None:
    origin = typing.get_origin(tp)
    kind = prop.get("type")
    if tp is models.ObjectMeta:
        if kind != "object":
            problems.append(f"{where}: metadata must be an object")
    elif attrs.has(tp):
        if kind != "object":
            problems.append(f"{where}: model object, CRD {kind}")
        else:
            _check(tp, prop, where, problems)
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        if kind != "string" or sorted(prop.get("enum", ())) != sorted(m.value for m in tp):
            problems.append(f"{where}: enum {[m.value for m in tp]} != CRD {prop.get('enum')}")
    elif origin is tuple:
        if kind != "array":
            problems.append(f"{where}: model list, CRD {kind}")
        else:
            _check_type(typing.get_args(tp)[0], prop["items"], where + "[]", problems)
    elif tp is str:
        if kind != "string":
            problems.append(f"{where}: model string, CRD {kind}")
    elif tp is int:
        if kind != "integer":
            problems.append(f"{where}: model integer, CRD {kind}")
    elif tp is bool:
        if kind != "boolean":
            problems.append(f"{where}: model boolean, CRD {kind}")
    else:
        problems.append(f"{where}: unchecked model type {tp!r}")


@pytest.mark.parametrize(
    ("cls", "file"),
    [
        (models.ComputeDomain, "resource.nvidia.com_computedomains.yaml"),
        (models.ComputeDomainClique, "resource.nvidia.com_computedomaincliques.yaml"),
    ],
    ids=["ComputeDomain", "ComputeDomainClique"],
)
def test_model_and_crd_agree(cls: type[Any], file: str) -> None:
    problems: list[str] = []
    _check(cls, _schema(file), cls.__name__, problems)
    assert problems == []


def test_checker_notices_a_mismatch() -> None:
    """The comparison above is not vacuous: a schema missing a field is reported both ways."""
    schema = _schema("resource.nvidia.com_computedomaincliques.yaml")
    items = schema["properties"]["daemons"]["items"]
    items["properties"]["extra"] = {"type": "string"}
    del items["properties"]["index"]
    problems: list[str] = []
    _check(models.ComputeDomainClique, schema, "ComputeDomainClique", problems)
    assert problems == [
        "ComputeDomainClique.daemons[].index: model field missing from the CRD",
        "ComputeDomainClique.daemons[].extra: CRD field missing from the model",
    ]


def test_spec_is_immutable_rule_is_upstreams() -> None:
    spec = _schema("resource.nvidia.com_computedomains.yaml")["properties"]["spec"]
    assert spec["x-kubernetes-validations"] == [
        {"rule": "self == oldSelf", "message": "A computeDomain.spec is immutable"}
    ]


def test_list_map_keys() -> None:
    cd = _schema("resource.nvidia.com_computedomains.yaml")["properties"]["status"]
    assert cd["properties"]["nodes"]["x-kubernetes-list-map-keys"] == ["name"]
    clique = _schema("resource.nvidia.com_computedomaincliques.yaml")["properties"]
    assert clique["daemons"]["x-kubernetes-list-map-keys"] == ["nodeName"]
