"""Malformed ComputeDomains sent to the API server: each is refused with a 422 whose message
names the object and every broken field, never a 5xx; whatever the server does accept, the
components can read (``api.convert.compute_domain``), so no bad object gets past the server
to choke a controller or plugin later."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computedomain.api import convert, names
from computedomain_sim.apiserver import testing
from tests.faults import settings as suite
from tests.support.clusters import CRDS

NS = "default"
SESSION = requests.Session()
SETTINGS = settings(
    max_examples=suite.examples(40, 400),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def server(apiserver: testing.RunningServer) -> testing.RunningServer:
    apiserver.install_crds([CRDS])
    return apiserver


def url(server: testing.RunningServer, name: str = "") -> str:
    base = f"{server.url}/apis/{names.GROUP_VERSION}/namespaces/{NS}/computedomains"
    return f"{base}/{name}" if name else base


def headers(server: testing.RunningServer) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}


def valid(name: str) -> dict[str, Any]:
    return {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.COMPUTE_DOMAIN_KIND,
        "metadata": {"name": name, "namespace": NS},
        "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "ch"}}},
    }


FLOATS = st.floats(allow_nan=False, allow_infinity=False)
NOT_INT = st.one_of(
    st.text(max_size=5), FLOATS.filter(lambda f: f != int(f)), st.booleans(),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(),
                                                         max_size=2),
)  # fmt: skip
NOT_STR = st.one_of(
    st.integers(), st.booleans(), st.lists(st.text(max_size=3), max_size=2), st.just({"a": 1})
)
NOT_OBJ = st.one_of(st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2))

# (field path named in the 422, how to break it): each mutation alone makes the object invalid.
MUTATIONS = {
    "spec.numNodes": st.one_of(st.integers(max_value=-1), NOT_INT).map(
        lambda v: ("set", ("spec", "numNodes"), v)
    ),
    "spec.channel.allocationMode": st.one_of(
        st.text(max_size=12).filter(lambda s: s not in ("All", "Single")), NOT_STR
    ).map(lambda v: ("set", ("spec", "channel", "allocationMode"), v)),
    "spec.channel.resourceClaimTemplate.name": st.one_of(
        NOT_STR.map(lambda v: ("set", ("spec", "channel", "resourceClaimTemplate", "name"), v)),
        st.just(("del", ("spec", "channel", "resourceClaimTemplate", "name"), None)),
    ),
    "spec.channel.resourceClaimTemplate": st.one_of(
        NOT_OBJ.map(lambda v: ("set", ("spec", "channel", "resourceClaimTemplate"), v)),
        st.just(("del", ("spec", "channel", "resourceClaimTemplate"), None)),
    ),
    "spec.channel": st.one_of(
        NOT_OBJ.map(lambda v: ("set", ("spec", "channel"), v)),
        st.just(("del", ("spec", "channel"), None)),
    ),
    "spec": NOT_OBJ.map(lambda v: ("set", ("spec",), v)),
}
# A mutation of a field makes mutations of the fields below it moot.
PARENTS = {
    "spec.channel.resourceClaimTemplate.name": "spec.channel.resourceClaimTemplate",
    "spec.channel.resourceClaimTemplate": "spec.channel",
    "spec.channel.allocationMode": "spec.channel",
    "spec.channel": "spec",
    "spec.numNodes": "spec",
}


def apply(obj: dict[str, Any], op: str, path: tuple[str, ...], value: Any) -> None:
    node = obj
    for key in path[:-1]:
        node = node[key]
    if op == "del":
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value


def ancestors(field: str) -> set[str]:
    found = set()
    while field in PARENTS:
        field = PARENTS[field]
        found.add(field)
    return found


@st.composite
def broken(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A ComputeDomain with 1-3 broken fields, and the paths of the ones that must be named."""
    fields = draw(st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=1, max_size=3, unique=True))
    # Keep only the outermost of nested mutations (an inner one lands in a replaced value).
    fields = [f for f in fields if not (ancestors(f) & set(fields))]
    obj = valid(f"bad-{uuid.uuid4().hex[:8]}")
    for field in sorted(fields, key=len):
        apply(obj, *draw(MUTATIONS[field]))
    return obj, fields


@SETTINGS
@given(case=broken())
def test_malformed_domains_are_refused_with_a_422_naming_each_field(
    server: testing.RunningServer, case: tuple[dict[str, Any], list[str]]
) -> None:
    obj, fields = case
    resp = SESSION.post(url(server), json=obj, headers=headers(server), timeout=10)
    assert resp.status_code == 422, (resp.status_code, resp.text[:500])
    status = resp.json()
    name = obj["metadata"]["name"]
    assert status["message"].startswith(f'ComputeDomain.resource.nvidia.com "{name}" is invalid: ')
    named = [c["field"] for c in status["details"]["causes"]]
    for field in fields:
        assert any(n == field or n.startswith(field + ".") for n in named), (field, status)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | FLOATS | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(
        st.sampled_from(["numNodes", "channel", "resourceClaimTemplate", "name", "allocationMode",
                         "status", "nodes", "ipAddress", "cliqueID", "index", "conditions", "type",
                         "lastTransitionTime", "reason", "message", "x", ""]),
        inner,
        max_size=3,
    ),
    max_leaves=10,
)  # fmt: skip


def accepted_is_readable(resp: requests.Response, what: str) -> None:
    assert resp.status_code < 500, (what, resp.status_code, resp.text[:500])
    if resp.status_code < 300:
        stored = resp.json()
        # Like kube-apiserver, the server accepts a domain without a spec (the schema's root
        # does not require one; a null spec is pruned): components must expect that one.
        if "spec" in stored:
            convert.compute_domain(stored)  # raises if a component could not read it
    else:
        assert resp.status_code in (400, 422), (what, resp.text[:500])
        assert resp.json()["message"]


@SETTINGS
@given(spec=JSONISH, status=JSONISH)
def test_whatever_the_server_accepts_the_components_can_read(
    server: testing.RunningServer, spec: Any, status: Any
) -> None:
    name = f"any-{uuid.uuid4().hex[:8]}"
    obj = valid(name)
    obj["spec"] = spec
    accepted_is_readable(
        SESSION.post(url(server), json=obj, headers=headers(server), timeout=10), "create"
    )
    created = SESSION.post(
        url(server), json=valid(name + "-s"), headers=headers(server), timeout=10
    )
    body = created.json()
    body["status"] = status
    resp = SESSION.put(
        url(server, name + "-s") + "/status", json=body, headers=headers(server), timeout=10
    )
    accepted_is_readable(resp, "status update")


def test_the_spec_is_immutable(server: testing.RunningServer) -> None:
    created = SESSION.post(url(server), json=valid("frozen"), headers=headers(server), timeout=10)
    assert created.status_code == 201, created.text
    changed = copy.deepcopy(created.json())
    changed["spec"]["numNodes"] = 7
    resp = SESSION.put(url(server, "frozen"), json=changed, headers=headers(server), timeout=10)
    assert resp.status_code == 422
    assert "A computeDomain.spec is immutable" in resp.json()["message"]
