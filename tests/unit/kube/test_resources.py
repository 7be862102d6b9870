"""Resource descriptions and the REST paths built from them."""

from __future__ import annotations

import pytest

from computedomain.kube import resources as r


@pytest.mark.parametrize(
    ("resource", "args", "expected"),
    [
        (r.PODS, {}, "/api/v1/pods"),
        (r.PODS, {"namespace": "ns"}, "/api/v1/namespaces/ns/pods"),
        (r.PODS, {"namespace": "ns", "name": "p"}, "/api/v1/namespaces/ns/pods/p"),
        (
            r.PODS,
            {"namespace": "ns", "name": "p", "subresource": "status"},
            "/api/v1/namespaces/ns/pods/p/status",
        ),
        (r.NODES, {"name": "n1"}, "/api/v1/nodes/n1"),
        (r.NAMESPACES, {"name": "kube-system"}, "/api/v1/namespaces/kube-system"),
        (
            r.COMPUTE_DOMAINS,
            {"namespace": "a", "name": "cd"},
            "/apis/resource.nvidia.com/v1beta1/namespaces/a/computedomains/cd",
        ),
        (r.RESOURCE_SLICES, {}, "/apis/resource.k8s.io/v1/resourceslices"),
        (r.LEASES, {"namespace": "d"}, "/apis/coordination.k8s.io/v1/namespaces/d/leases"),
        (r.PODS, {"namespace": "ns", "name": "a/b"}, "/api/v1/namespaces/ns/pods/a%2Fb"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_paths(resource: r.Resource, args: dict[str, str], expected: str) -> None:
    assert resource.path(**args) == expected


@pytest.mark.parametrize(
    ("resource", "args", "fragment"),
    [
        (r.NODES, {"namespace": "ns"}, "cluster-scoped"),
        (r.PODS, {"name": "p"}, "needs a namespace"),
        (r.PODS, {"namespace": "ns", "subresource": "status"}, "needs an object name"),
        (r.PODS, {"namespace": "..", "name": "p"}, "invalid namespace"),
        (r.PODS, {"namespace": "ns", "name": ""}, "invalid name"),
    ],
    ids=["cluster-with-ns", "name-without-ns", "sub-without-name", "dotdot", "empty-name"],
)
def test_bad_paths_raise_naming_the_problem(
    resource: r.Resource, args: dict[str, str], fragment: str
) -> None:
    with pytest.raises(ValueError, match=fragment):
        resource.path(**args)


def test_api_version() -> None:
    assert r.PODS.api_version == "v1"
    assert r.DAEMON_SETS.api_version == "apps/v1"
    assert r.COMPUTE_DOMAINS.api_version == "resource.nvidia.com/v1beta1"


def test_constants_are_unique_and_findable_by_kind() -> None:
    keys = {(x.api_version, x.kind) for x in r.ALL}
    assert len(keys) == len(r.ALL)
    assert r.for_kind("apps/v1", "DaemonSet") is r.DAEMON_SETS
    assert r.for_kind("v1", "Nope") is None
