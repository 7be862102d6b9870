"""Random paths, methods, headers and bodies never make the server answer 5xx (and never take
it down): bad input is a 4xx ``Status``."""

from __future__ import annotations

import json

import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computedomain_sim.apiserver import testing

SEGMENTS = st.sampled_from(
    [
        "api", "apis", "v1", "namespaces", "default", "pods", "configmaps", "status", "binding",
        "eviction", "token", "finalize", "apps", "daemonsets", "resource.k8s.io", "resourceslices",
        "apiextensions.k8s.io", "customresourcedefinitions", "watch", "nodes", "x", "..", "%2F",
        "serviceaccounts", "coordination.k8s.io", "leases", "openapi", "v3", "version", "",
    ]
)  # fmt: skip
PATHS = st.lists(SEGMENTS, min_size=1, max_size=7).map(lambda parts: "/" + "/".join(parts))
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(
        st.sampled_from(["metadata", "name", "spec", "status", "kind", "apiVersion", "labels",
                         "finalizers", "ownerReferences", "data", "op", "path", "value",
                         "resourceVersion", "namespace", "generateName", "target"]),
        inner,
        max_size=4,
    ),
    max_leaves=12,
)  # fmt: skip
BODIES = st.one_of(
    st.binary(max_size=64),
    JSONISH.map(lambda v: json.dumps(v).encode()),
    st.just(b'{"metadata":{"name":"ok"}}'),
)
CONTENT_TYPES = st.sampled_from(
    [
        "application/json", "application/yaml", "application/merge-patch+json",
        "application/json-patch+json", "application/strategic-merge-patch+json",
        "application/apply-patch+yaml", "application/vnd.kubernetes.protobuf", "text/plain", "",
    ]
)  # fmt: skip
QUERIES = st.dictionaries(
    st.sampled_from(["watch", "labelSelector", "fieldSelector", "limit", "continue",
                     "resourceVersion", "resourceVersionMatch", "timeoutSeconds",
                     "fieldValidation", "gracePeriodSeconds", "propagationPolicy"]),
    st.text(max_size=8),
    max_size=3,
)  # fmt: skip


SESSION = requests.Session()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]),
    path=PATHS,
    body=BODIES,
    content_type=CONTENT_TYPES,
    query=QUERIES,
)
def test_no_5xx(
    apiserver: testing.RunningServer,
    *,
    method: str,
    path: str,
    body: bytes,
    content_type: str,
    query: dict[str, str],
) -> None:
    if query.get("watch"):
        query["timeoutSeconds"] = "1"
    resp = SESSION.request(
        method,
        apiserver.url + path,
        params=query,
        data=body,
        headers={"Content-Type": content_type, "Authorization": f"Bearer {apiserver.token}"},
        timeout=10,
    )
    assert resp.status_code < 500, (resp.status_code, resp.text[:500])
