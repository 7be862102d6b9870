"""Request encoding and answer decoding used by the REST client."""

from __future__ import annotations

import pytest

from computedomain.kube import errors, resources, wire


def test_query_spelling() -> None:
    assert wire.query(watch=True, limit=5, labelSelector=None, force=False) == [
        ("watch", "true"), ("limit", "5"), ("force", "false"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "plural"),
    [
        ("/api/v1/namespaces/ns/pods/p", "pods"),
        ("/api/v1/nodes", "nodes"),
        ("/api/v1/namespaces/ns", "namespaces"),
        ("/apis/apps/v1/namespaces/ns/daemonsets?watch=true", "daemonsets"),
        ("/api/v1/namespaces/ns/serviceaccounts/sa/token", "serviceaccounts"),
        ("/api", "api"),
    ],
)
def test_plural_of(path: str, plural: str) -> None:
    assert wire.plural_of(path) == plural


def test_list_items_get_type_meta() -> None:
    listed = wire.with_type_meta({"items": [{"metadata": {"name": "a"}}]}, resources.NODES)
    assert listed["items"][0]["kind"] == "Node"
    assert listed["items"][0]["apiVersion"] == "v1"


def test_decode_body_and_events() -> None:
    assert wire.decode_body(b"", 200, "x") == {}
    with pytest.raises(errors.ApiServerError, match="not JSON"):
        wire.decode_body(b"<html>", 200, "GET /x")
    with pytest.raises(errors.ApiServerError, match="expected a JSON object"):
        wire.decode_body(b"[1]", 200, "GET /x")
    assert wire.decode_event(b'{"type":"ADDED","object":{"a":1}}', "/p") == ("ADDED", {"a": 1})
    with pytest.raises(errors.ApiServerError, match="undecodable"):
        wire.decode_event(b'{"type":"ADDED"}', "/p")
    with pytest.raises(errors.Gone):
        wire.decode_event(b'{"type":"ERROR","object":{"code":410,"reason":"Expired"}}', "/p")
