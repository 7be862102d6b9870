"""The ComputeDomain and ComputeDomainClique schemas through the engine: the spec's fixtures and
the CRDs the project ships in ``deployments/``, which must behave the same on these cases."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from computedomain_sim.apiserver.schema import StructuralSchema
from tests.support.clusters import CRDS
from tests.unit.sim.schema_crds import COMPUTE_DOMAIN, COMPUTE_DOMAIN_CLIQUE, compute_domain


def _shipped(plural: str) -> dict[str, Any] | None:
    path = CRDS / f"resource.nvidia.com_{plural}.yaml"
    if not path.exists():
        return None
    crd = yaml.safe_load(path.read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _sources(fixture: dict[str, Any], plural: str) -> list[Any]:
    shipped = _shipped(plural)
    params = [pytest.param(fixture, id="spec-fixture")]
    if shipped is not None:
        params.append(pytest.param(shipped, id="deployments-crd"))
    return params


@pytest.fixture(params=_sources(COMPUTE_DOMAIN, "computedomains"))
def cd_schema(request: pytest.FixtureRequest) -> StructuralSchema:
    return StructuralSchema.compile(request.param)


@pytest.fixture(params=_sources(COMPUTE_DOMAIN_CLIQUE, "computedomaincliques"))
def clique_schema(request: pytest.FixtureRequest) -> StructuralSchema:
    return StructuralSchema.compile(request.param)


def _admit(
    schema: StructuralSchema, body: dict[str, Any], old: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """What the server does on a write: prune, default, validate."""
    obj = schema.default(schema.prune(body))
    return obj, [c.render() for c in schema.validate(obj, old)]


def test_a_users_computedomain_is_defaulted_and_valid(cd_schema: StructuralSchema) -> None:
    obj, causes = _admit(cd_schema, compute_domain())
    assert causes == []
    assert obj["spec"] == {
        "channel": {
            "resourceClaimTemplate": {"name": "imex-channel-0"},
            "allocationMode": "Single",
        },
        "numNodes": 0,
    }
    assert "status" not in obj, "a fresh ComputeDomain has no status"


NOT_CHECKED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation"
)
INVALID = [
    (
        "allocation mode outside the enum",
        {"channel": {"resourceClaimTemplate": {"name": "t"}, "allocationMode": "Foo"}},
        [
            "spec.channel.allocationMode: Unsupported value: "
            '"Foo": supported values: "All", "Single"',
            NOT_CHECKED,
        ],
    ),
    (
        "negative numNodes",
        {"numNodes": -1},
        [
            "spec.numNodes: Invalid value: -1: spec.numNodes in body "
            "should be greater than or equal to 0"
        ],
    ),
    (
        "numNodes of the wrong type",
        {"numNodes": "string"},
        [
            'spec.numNodes: Invalid value: "string": spec.numNodes in '
            'body must be of type integer: "string"',
            NOT_CHECKED,
        ],
    ),
    ("channel missing", {"channel": None}, ["spec.channel: Required value", NOT_CHECKED]),
    (
        "template name missing",
        {"channel": {"resourceClaimTemplate": {}}},
        ["spec.channel.resourceClaimTemplate.name: Required value", NOT_CHECKED],
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_computedomains(
    cd_schema: StructuralSchema, spec: dict[str, Any], expected: list[str]
) -> None:
    body = compute_domain(**spec)
    if spec.get("channel", ...) is None:
        del body["spec"]["channel"]
    assert _admit(cd_schema, body)[1] == expected


def test_spec_is_immutable(cd_schema: StructuralSchema) -> None:
    old, _ = _admit(cd_schema, compute_domain())
    changed = compute_domain(channel={"resourceClaimTemplate": {"name": "other"}})
    assert _admit(cd_schema, changed, old)[1] == [
        "spec: Invalid value: A computeDomain.spec is immutable"
    ]
    assert _admit(cd_schema, compute_domain(), old)[1] == []


def test_status_update_with_nodes(cd_schema: StructuralSchema) -> None:
    old, _ = _admit(cd_schema, compute_domain())
    new = copy.deepcopy(old)
    new["status"] = {
        "nodes": [
            {"name": "n1", "ipAddress": "10.0.0.1", "cliqueID": "c.0", "index": 0},
            {"name": "n2", "ipAddress": "10.0.0.2", "cliqueID": "", "index": -1, "status": "Ready"},
        ]
    }
    obj, causes = _admit(cd_schema, new, old)
    assert causes == []
    assert obj["status"]["status"] == "NotReady"
    assert [n["status"] for n in obj["status"]["nodes"]] == ["NotReady", "Ready"]


def test_status_nodes_are_unique_by_name(cd_schema: StructuralSchema) -> None:
    old, _ = _admit(cd_schema, compute_domain())
    new = copy.deepcopy(old)
    node = {"name": "n1", "ipAddress": "10.0.0.1", "cliqueID": "", "index": -1}
    new["status"] = {"status": "Ready", "nodes": [node, {**node, "ipAddress": "10.0.0.9"}]}
    assert _admit(cd_schema, new, old)[1] == ['status.nodes[1]: Duplicate value: {"name":"n1"}']


def test_status_enum(cd_schema: StructuralSchema) -> None:
    body = compute_domain()
    body["status"] = {"status": "Maybe"}
    assert _admit(cd_schema, body)[1] == [
        'status.status: Unsupported value: "Maybe": supported values: "Ready", "NotReady"',
        NOT_CHECKED,
    ]


def _clique(*daemons: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomainClique",
        "metadata": {"name": "uid.cluster.0", "namespace": "nvidia-dra-driver"},
        "daemons": list(daemons),
    }


def test_clique_daemons(clique_schema: StructuralSchema) -> None:
    daemon = {"nodeName": "n1", "ipAddress": "10.0.0.1", "cliqueID": "cluster.0", "index": 0}
    obj, causes = _admit(clique_schema, _clique(daemon, {**daemon, "nodeName": "n2", "index": 1}))
    assert causes == []
    assert [d["status"] for d in obj["daemons"]] == ["NotReady", "NotReady"]
    assert _admit(clique_schema, _clique(daemon, {**daemon, "index": 1}))[1] == [
        'daemons[1]: Duplicate value: {"nodeName":"n1"}'
    ]
    missing_ip = {k: v for k, v in daemon.items() if k != "ipAddress"}
    assert _admit(clique_schema, _clique(missing_ip))[1] == ["daemons[0].ipAddress: Required value"]


def test_unknown_fields_are_reported_for_warnings(cd_schema: StructuralSchema) -> None:
    unknown: list[str] = []
    body = compute_domain(numNode=3)
    body["spec"]["channel"]["mode"] = "All"
    cd_schema.prune(body, unknown=unknown)
    assert unknown == ["spec.channel.mode", "spec.numNode"]


def test_status_subresource_words_messages_relative_to_status(cd_schema: StructuralSchema) -> None:
    old, _ = _admit(cd_schema, compute_domain())
    new = copy.deepcopy(old)
    new["spec"]["numNodes"] = -5  # the status subresource does not validate spec
    new["status"] = {"status": "Ready", "nodes": [{"name": "n1", "cliqueID": "", "index": "x"}]}
    causes = [c.render() for c in cd_schema.validate(new, old, subresource="status")]
    assert causes == [
        'status.nodes[0].index: Invalid value: "string": nodes[0].index in body must be of type '
        'integer: "string"',
        "status.nodes[0].ipAddress: Required value",
        NOT_CHECKED,
    ]
    new["status"] = {"nodes": []}
    assert [c.render() for c in cd_schema.validate(new, old, subresource="status")] == [
        "status.status: Required value",
        NOT_CHECKED,
    ]
