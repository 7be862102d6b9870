"""Watch semantics through ``kubernetes.watch.Watch``: resume from a resourceVersion,
bookmarks, 410 Gone then relist, selector transitions, initial events, timeouts."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from kubernetes import client, watch

from computedomain_sim.apiserver import testing
from computedomain_sim.apiserver.state import ServerConfig

WINDOW = 20


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    """A server with a small event window and frequent bookmarks."""
    directory: Path = tmp_path_factory.mktemp("watch")
    config = ServerConfig(bookmark_interval=0.2)
    with testing.running(directory, event_window=WINDOW, config=config) as running:
        yield running


def _cm(name: str, labels: dict[str, str] | None = None) -> dict[str, object]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": {"v": "0"}}


def test_watch_from_list_rv_sees_changes_in_order(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, _cm("before"))
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, _cm("a"))
    core.patch_namespaced_config_map("a", namespace, {"data": {"v": "1"}})
    core.delete_namespaced_config_map("a", namespace)
    seen = []
    w = watch.Watch()
    for ev in w.stream(
        core.list_namespaced_config_map, namespace, resource_version=rv, timeout_seconds=2
    ):
        seen.append((ev["type"], ev["object"].metadata.name))
        if len(seen) == 3:
            w.stop()
    assert seen == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_watch_without_rv_starts_with_current_objects(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    for name in ("x", "y"):
        core.create_namespaced_config_map(namespace, _cm(name))
    w = watch.Watch()
    names = []
    for ev in w.stream(core.list_namespaced_config_map, namespace, timeout_seconds=1):
        assert ev["type"] == "ADDED"
        names.append(ev["object"].metadata.name)
        if len(names) == 2:
            w.stop()
    assert sorted(names) == ["x", "y"]


def test_resume_from_last_seen_rv(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, _cm("r1"))
    w = watch.Watch()
    for ev in w.stream(
        core.list_namespaced_config_map, namespace, resource_version=rv, timeout_seconds=2
    ):
        rv = ev["object"].metadata.resource_version
        w.stop()
    core.create_namespaced_config_map(namespace, _cm("r2"))
    w = watch.Watch()
    for ev in w.stream(
        core.list_namespaced_config_map, namespace, resource_version=rv, timeout_seconds=2
    ):
        assert (ev["type"], ev["object"].metadata.name) == ("ADDED", "r2")
        w.stop()


def test_bookmarks_carry_current_rv(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    w = watch.Watch()
    for ev in w.stream(
        core.list_namespaced_config_map,
        namespace,
        resource_version=rv,
        allow_watch_bookmarks=True,
        timeout_seconds=5,
    ):
        assert ev["type"] == "BOOKMARK"
        assert ev["object"]["kind"] == "ConfigMap"
        assert int(ev["object"]["metadata"]["resourceVersion"]) >= int(rv)
        w.stop()


def test_too_old_rv_is_410_then_relist_works(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    old_rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, _cm("churn"))
    for i in range(WINDOW + 2):
        core.patch_namespaced_config_map("churn", namespace, {"data": {"v": str(i)}})
    with pytest.raises(client.ApiException) as exc:
        for _ev in watch.Watch().stream(
            core.list_namespaced_config_map, namespace, resource_version=old_rv
        ):
            pass
    assert exc.value.status == 410
    # The informer's answer to 410: relist, then watch from the list's resourceVersion.
    listed = core.list_namespaced_config_map(namespace)
    core.patch_namespaced_config_map("churn", namespace, {"data": {"v": "final"}})
    w = watch.Watch()
    for ev in w.stream(
        core.list_namespaced_config_map,
        namespace,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=2,
    ):
        assert ev["object"].data == {"v": "final"}
        w.stop()


def test_error_event_is_a_410_status(apiserver: testing.RunningServer, namespace: str) -> None:
    core = client.CoreV1Api(apiserver.api_client())
    core.create_namespaced_config_map(namespace, _cm("old"))
    for i in range(WINDOW + 2):
        core.patch_namespaced_config_map("old", namespace, {"data": {"v": str(i)}})
    resp = requests.get(
        f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps",
        params={"watch": "true", "resourceVersion": "1"},
        headers={"Authorization": f"Bearer {apiserver.token}"},
        timeout=5,
    )
    assert resp.status_code == 200
    event = json.loads(resp.text.splitlines()[0])
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"
    assert event["object"]["message"].startswith("too old resource version: 1 (")


def test_label_selector_transitions(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, _cm("m", {"pick": "no"}))
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.patch_namespaced_config_map("m", namespace, {"metadata": {"labels": {"pick": "yes"}}})
    core.patch_namespaced_config_map("m", namespace, {"data": {"v": "2"}})
    core.patch_namespaced_config_map("m", namespace, {"metadata": {"labels": {"pick": "no"}}})
    seen = []
    w = watch.Watch()
    for ev in w.stream(
        core.list_namespaced_config_map,
        namespace,
        resource_version=rv,
        label_selector="pick=yes",
        timeout_seconds=2,
    ):
        seen.append((ev["type"], ev["object"].metadata.labels["pick"]))
        if len(seen) == 3:
            w.stop()
    # Out of the selector: DELETED with the last matching state.
    assert seen == [("ADDED", "yes"), ("MODIFIED", "yes"), ("DELETED", "yes")]


def test_name_pinned_watches_and_lists_see_only_that_object(
    api_client: client.ApiClient, namespace: str
) -> None:
    """A metadata.name field selector (the hub routes such watches by name): other objects'
    events never arrive, label transitions still turn into ADDED/DELETED, and a cluster-wide
    watch of the name sees it in every namespace."""
    core = client.CoreV1Api(api_client)
    other_ns = f"{namespace}-2"
    core.create_namespace({"metadata": {"name": other_ns}})
    try:
        core.create_namespaced_config_map(namespace, _cm("p", {"pick": "no"}))
        core.create_namespaced_config_map(namespace, _cm("q", {"pick": "yes"}))
        listed = core.list_namespaced_config_map(namespace, field_selector="metadata.name=p")
        assert [i.metadata.name for i in listed.items] == ["p"]
        none = core.list_namespaced_config_map(namespace, field_selector="metadata.name=zz")
        assert none.items == []
        rv = listed.metadata.resource_version
        core.patch_namespaced_config_map("q", namespace, {"data": {"v": "q1"}})
        core.patch_namespaced_config_map("p", namespace, {"metadata": {"labels": {"pick": "yes"}}})
        core.patch_namespaced_config_map("q", namespace, {"data": {"v": "q2"}})
        core.patch_namespaced_config_map("p", namespace, {"metadata": {"labels": {"pick": "no"}}})
        core.create_namespaced_config_map(other_ns, _cm("p", {"pick": "yes"}))
        core.delete_namespaced_config_map("p", namespace)

        def stream(fn: object, *args: object, count: int, **kw: object) -> list[tuple[str, str]]:
            seen = []
            w = watch.Watch()
            for ev in w.stream(fn, *args, resource_version=rv, timeout_seconds=2, **kw):
                seen.append((ev["type"], ev["object"].metadata.namespace))
                if len(seen) == count:
                    w.stop()
            return seen

        # Asks for one event more than there is: the stream runs to its timeout, so an event
        # of another object would have shown up.
        pinned = stream(
            core.list_namespaced_config_map, namespace, count=4, field_selector="metadata.name=p"
        )
        assert pinned == [("MODIFIED", namespace), ("MODIFIED", namespace), ("DELETED", namespace)]
        selected = stream(
            core.list_namespaced_config_map,
            namespace,
            count=2,
            field_selector="metadata.name=p",
            label_selector="pick=yes",
        )
        assert selected == [("ADDED", namespace), ("DELETED", namespace)]
        everywhere = stream(
            core.list_config_map_for_all_namespaces, count=4, field_selector="metadata.name=p"
        )
        assert everywhere == [
            ("MODIFIED", namespace),
            ("MODIFIED", namespace),
            ("ADDED", other_ns),
            ("DELETED", namespace),
        ]
    finally:
        core.delete_namespace(other_ns)


def test_timeout_ends_stream(api_client: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api_client)
    events = list(
        watch.Watch().stream(
            core.list_namespaced_config_map,
            namespace,
            resource_version=core.list_namespaced_config_map(namespace).metadata.resource_version,
            timeout_seconds=1,
        )
    )
    assert events == []


def test_send_initial_events_ends_with_marked_bookmark(
    apiserver: testing.RunningServer, namespace: str
) -> None:
    core = client.CoreV1Api(apiserver.api_client())
    core.create_namespaced_config_map(namespace, _cm("i1"))
    resp = requests.get(
        f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps",
        params={
            "watch": "true",
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "1",
        },
        headers={"Authorization": f"Bearer {apiserver.token}"},
        stream=True,
        timeout=5,
    )
    lines = resp.iter_lines()
    first = json.loads(next(lines))
    second = json.loads(next(lines))
    resp.close()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "i1")
    assert second["type"] == "BOOKMARK"
    assert second["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_continue_token_expires_with_the_window(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    for name in ("k1", "k2"):
        core.create_namespaced_config_map(namespace, _cm(name))
    first = core.list_namespaced_config_map(namespace, limit=1)
    for i in range(WINDOW + 2):
        core.patch_namespaced_config_map("k2", namespace, {"data": {"v": str(i)}})
    with pytest.raises(client.ApiException) as exc:
        core.list_namespaced_config_map(namespace, limit=1, _continue=first.metadata._continue)
    assert exc.value.status == 410
    message = json.loads(exc.value.body)["message"]
    assert message.startswith("The provided continue parameter is too old")


def test_watch_of_a_client_that_went_away_ends(
    apiserver: testing.RunningServer, namespace: str
) -> None:
    assert apiserver.server.state is not None
    hub = apiserver.server.state.hub
    before = hub.count()
    resp = requests.get(
        f"{apiserver.url}/api/v1/namespaces/{namespace}/configmaps",
        params={"watch": "true", "resourceVersion": "0"},
        headers={"Authorization": f"Bearer {apiserver.token}"},
        stream=True,
        timeout=5,
    )
    deadline = time.monotonic() + 5
    while hub.count() == before:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    resp.close()
    while hub.count() != before:
        assert time.monotonic() < deadline, "the watch outlived its client"
        time.sleep(0.01)
