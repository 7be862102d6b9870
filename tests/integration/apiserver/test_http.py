"""HTTP-level behaviour: bad input answered with the right Status, list paging and
selectors, subresources, the Event views, Tables, discovery and the pipeline's stage seam."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from aiohttp import web
from kubernetes import client

from computedomain_sim.apiserver import testing
from computedomain_sim.apiserver.pipeline import INFO, Handler
from computedomain_sim.apiserver.state import ServerConfig
from tests.conftest import CRD_FIXTURES


@web.middleware
async def too_many_on_header(request: web.BaseRequest, handler: Handler) -> web.StreamResponse:
    """A stand-in for a fault-injection stage: answers 429 when asked to."""
    if request.headers.get("X-Inject") == "boom":
        msg = "injected failure"
        raise RuntimeError(msg)
    if request.headers.get("X-Inject") == "429" and request[INFO].is_resource:
        resp = web.json_response({"kind": "Status", "code": 429}, status=429)
        resp.headers["Retry-After"] = "1"
        return resp
    return await handler(request)


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    directory: Path = tmp_path_factory.mktemp("http")
    config = ServerConfig(future_rv_wait=0.2)
    with testing.running(directory, stages=[too_many_on_header], config=config) as running:
        running.install_crds([CRD_FIXTURES])
        yield running


def call(
    srv: testing.RunningServer, method: str, path: str, body: Any = None, **headers: str
) -> requests.Response:
    data = body if isinstance(body, bytes) else (None if body is None else json.dumps(body))
    hdrs = {"Authorization": f"Bearer {srv.token}", "Content-Type": "application/json", **headers}
    return requests.request(method, srv.url + path, data=data, headers=hdrs, timeout=10)


CMS = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(
    ("method", "path", "body", "code", "reason"),
    [
        ("POST", CMS, b"{not json", 400, "BadRequest"),
        ("POST", CMS, b"[1, 2]", 400, "BadRequest"),
        ("POST", CMS, {"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
         400, "BadRequest"),
        ("POST", CMS, {"kind": "Pod", "metadata": {"name": "a"}}, 400, "BadRequest"),
        ("POST", CMS, {"metadata": {"name": "Not_Valid"}}, 422, "Invalid"),
        ("POST", CMS, {"metadata": {"name": "a", "labels": {"k": "bad value"}}}, 422, "Invalid"),
        ("POST", CMS, {"metadata": {"name": "a", "resourceVersion": "5"}}, 400, "BadRequest"),
        ("GET", "/api/v1/namespaces/default/widgets", None, 404, "NotFound"),
        ("GET", "/apis/nope.io/v1/things", None, 404, "NotFound"),
        ("GET", "/api/v1/namespaces/default/nodes", None, 404, "NotFound"),
        ("GET", CMS + "?labelSelector=a%20b", None, 400, "BadRequest"),
        ("GET", CMS + "?fieldSelector=spec.foo%3Dx", None, 400, "BadRequest"),
        ("PATCH", CMS + "/missing", {"data": {}}, 404, "NotFound"),
        ("POST", CMS + "?dryRun=Bogus", {"metadata": {"name": "d"}}, 422, "Invalid"),
        ("POST", CMS + "?fieldValidation=Bogus", {"metadata": {"name": "d"}}, 400, "BadRequest"),
    ],
)  # fmt: skip
def test_bad_requests_get_status_errors(
    apiserver: testing.RunningServer, *, method: str, path: str, body: Any, code: int, reason: str
) -> None:
    resp = call(apiserver, method, path, body)
    assert resp.status_code == code, resp.text
    status = resp.json()
    assert (status["kind"], status["code"], status["reason"]) == ("Status", code, reason)


def test_body_over_3_mib_is_413(apiserver: testing.RunningServer) -> None:
    big = {"metadata": {"name": "big"}, "data": {"k": "x" * (3 * 1024 * 1024)}}
    resp = call(apiserver, "POST", CMS, big)
    assert resp.status_code == 413
    assert resp.json()["message"] == "Request entity too large: limit is 3145728"


def test_strict_field_validation_for_custom_resources(apiserver: testing.RunningServer) -> None:
    path = "/apis/resource.nvidia.com/v1beta1/namespaces/default/computedomains"
    body = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "strict"},
        "spec": {"channel": {"resourceClaimTemplate": {"name": "r"}}, "bogus": 1},
    }
    resp = call(apiserver, "POST", path + "?fieldValidation=Strict", body)
    assert resp.status_code == 400
    assert resp.json()["message"] == (
        'ComputeDomain in version "v1beta1" cannot be handled as a ComputeDomain: strict '
        'decoding error: unknown field "spec.bogus"'
    )
    warned = call(apiserver, "POST", path, body)
    assert warned.status_code == 201
    assert warned.headers["Warning"] == '299 - "unknown field \\"spec.bogus\\""'
    assert "bogus" not in warned.json()["spec"], "pruned"


def test_strategic_merge_is_415_for_custom_resources(apiserver: testing.RunningServer) -> None:
    path = "/apis/example.com/v1/widgets"
    call(apiserver, "POST", path, {"apiVersion": "example.com/v1", "kind": "Widget",
                                   "metadata": {"name": "w"}})  # fmt: skip
    resp = call(apiserver, "PATCH", path + "/w", {"a": 1},
                **{"Content-Type": "application/strategic-merge-patch+json"})  # fmt: skip
    assert resp.status_code == 415
    assert "application/strategic-merge-patch+json" not in resp.json()["message"]


def test_limit_continue_is_a_consistent_snapshot(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    for i in range(5):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"p{i}"}})
    first = core.list_namespaced_config_map(namespace, limit=2)
    assert [c.metadata.name for c in first.items] == ["p0", "p1"]
    assert first.metadata.remaining_item_count == 3
    core.delete_namespaced_config_map("p3", namespace)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "p9"}})
    rest = core.list_namespaced_config_map(namespace, limit=10, _continue=first.metadata._continue)
    assert [c.metadata.name for c in rest.items] == ["p2", "p3", "p4"]
    assert rest.metadata.resource_version == first.metadata.resource_version
    assert not rest.metadata._continue


def test_field_selectors_and_binding(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    spec = {"containers": [{"name": "c", "image": "i"}]}
    for name in ("a", "b"):
        core.create_namespaced_pod(namespace, {"metadata": {"name": name}, "spec": spec})
    # Like kube-apiserver, binding answers a Status, which the typed client cannot decode as a
    # V1Binding: read the raw response.
    core.create_namespaced_pod_binding(
        "a",
        namespace,
        {"metadata": {"name": "a"}, "target": {"kind": "Node", "name": "n1"}},
        _preload_content=False,
    )
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_pod_binding(
            "a",
            namespace,
            {"metadata": {"name": "a"}, "target": {"kind": "Node", "name": "n2"}},
            _preload_content=False,
        )
    assert exc.value.status == 409
    on_n1 = core.list_namespaced_pod(namespace, field_selector="spec.nodeName=n1")
    assert [p.metadata.name for p in on_n1.items] == ["a"]
    unbound = core.list_pod_for_all_namespaces(
        field_selector=f"spec.nodeName=,metadata.namespace={namespace}"
    )
    assert [p.metadata.name for p in unbound.items] == ["b"]
    conditions = core.read_namespaced_pod("a", namespace).status.conditions
    assert [(c.type, c.status) for c in conditions] == [("PodScheduled", "True")]


def test_eviction_deletes_the_pod(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod(
        namespace,
        {"metadata": {"name": "ev"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    )
    core.create_namespaced_pod_eviction(
        "ev",
        namespace,
        {"metadata": {"name": "ev", "namespace": namespace}},
        _preload_content=False,
    )
    assert core.list_namespaced_pod(namespace).items == []


def test_events_are_served_by_both_apis(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    events = client.EventsV1Api(api_client)
    core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace},
            "reason": "Started",
            "message": "hello",
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingComponent": "test",
            "reportingInstance": "test-1",
            "action": "Start",
            "type": "Normal",
        },
    )
    listed = events.list_namespaced_event(namespace, field_selector="regarding.name=p")
    assert [(e.note, e.regarding.name, e.reporting_controller) for e in listed.items] == [
        ("hello", "p", "test")
    ]
    events.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": "e2"},
            "eventTime": "2026-01-01T00:00:01.000000Z",
            "regarding": {"kind": "Pod", "name": "q", "namespace": namespace},
            "note": "from events.k8s.io",
            "reason": "Pulled",
            "type": "Normal",
            "reportingController": "test",
            "reportingInstance": "test-1",
            "action": "Pull",
        },
    )
    core_view = core.list_namespaced_event(namespace, field_selector="involvedObject.kind=Pod")
    assert sorted(e.message for e in core_view.items) == ["from events.k8s.io", "hello"]
    assert core.read_namespaced_event("e2", namespace).involved_object.name == "q"


def test_tables_for_kubectl(apiserver: testing.RunningServer) -> None:
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json"
    resp = call(apiserver, "GET", "/api/v1/namespaces", Accept=accept)
    table = resp.json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Status", "Age"]
    names = [row["cells"][0] for row in table["rows"]]
    assert "default" in names
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_discovery_documents(apiserver: testing.RunningServer) -> None:
    core = call(apiserver, "GET", "/api/v1").json()
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["shortNames"] == ["po"]
    assert {r["name"] for r in core["resources"]} >= {
        "pods/status",
        "pods/binding",
        "serviceaccounts/token",
    }
    groups = call(apiserver, "GET", "/apis").json()
    assert any(g["name"] == "resource.nvidia.com" for g in groups["groups"])
    aggregated = call(
        apiserver, "GET", "/apis",
        Accept="application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    )  # fmt: skip
    assert aggregated.headers["Content-Type"].startswith("application/json;g=apidiscovery.k8s.io")
    cd = next(
        i for i in aggregated.json()["items"] if i["metadata"]["name"] == "resource.nvidia.com"
    )
    resource = cd["versions"][0]["resources"][0]
    assert (resource["resource"], resource["scope"]) == ("computedomains", "Namespaced")


def test_extra_stage_runs_after_classification(apiserver: testing.RunningServer) -> None:
    resp = call(apiserver, "GET", CMS, **{"X-Inject": "429"})
    assert resp.status_code == 429
    assert resp.headers["Retry-After"] == "1"
    assert call(apiserver, "GET", "/version", **{"X-Inject": "429"}).status_code == 200


def test_unexpected_exception_is_a_logged_500_status(
    apiserver: testing.RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    resp = call(apiserver, "GET", CMS, **{"X-Inject": "boom"})
    assert resp.status_code == 500
    assert resp.json()["reason"] == "InternalError"
    assert resp.json()["message"] == "Internal error occurred: RuntimeError: injected failure"
    assert any("internal error serving GET" in r.getMessage() for r in caplog.records)
    assert call(apiserver, "GET", CMS).status_code == 200, "the server keeps serving"


def test_list_at_a_future_resource_version_times_out(apiserver: testing.RunningServer) -> None:
    current = int(call(apiserver, "GET", CMS).json()["metadata"]["resourceVersion"])
    resp = call(apiserver, "GET", f"{CMS}?resourceVersion={current + 1000}")
    assert resp.status_code == 504
    assert resp.json()["reason"] == "Timeout"
    assert resp.json()["message"].startswith(f"Too large resource version: {current + 1000}")
    exact = call(apiserver, "GET", f"{CMS}?resourceVersion=1&resourceVersionMatch=Exact")
    assert exact.status_code in (200, 410)


def test_dry_run_checks_everything_and_stores_nothing(apiserver: testing.RunningServer) -> None:
    created = call(apiserver, "POST", CMS + "?dryRun=All", {"metadata": {"name": "dry"}})
    assert created.status_code == 201
    assert created.json()["metadata"]["uid"]
    assert "resourceVersion" not in created.json()["metadata"]
    assert call(apiserver, "GET", CMS + "/dry").status_code == 404
    invalid = call(apiserver, "POST", CMS + "?dryRun=All", {"metadata": {"name": "Dry_"}})
    assert invalid.status_code == 422
    stored = call(apiserver, "POST", CMS, {"metadata": {"name": "dry"}, "data": {"a": "1"}}).json()
    patched = call(
        apiserver, "PATCH", CMS + "/dry?dryRun=All", {"data": {"a": "2"}},
        **{"Content-Type": "application/merge-patch+json"},
    )  # fmt: skip
    assert patched.json()["data"] == {"a": "2"}
    assert patched.json()["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert call(apiserver, "GET", CMS + "/dry").json() == stored
    assert call(apiserver, "DELETE", CMS + "/dry?dryRun=All").status_code == 200
    assert call(apiserver, "GET", CMS + "/dry").json() == stored
