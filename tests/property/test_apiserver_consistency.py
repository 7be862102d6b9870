"""Invariants of the embedded API server under random operation sequences, checked over HTTP
with the official client: resourceVersions strictly increase, a watch from R replays exactly
the changes after R (in order, once), and concurrent compare-and-swap writers lose nothing."""

from __future__ import annotations

import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client, watch

from computedomain_sim.apiserver import testing

NAMES = st.sampled_from(["a", "b", "c", "d"])
OPS = st.lists(
    st.tuples(st.sampled_from(["create", "update", "patch", "delete"]), NAMES, st.integers(0, 9)),
    min_size=1,
    max_size=25,
)
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _apply(core: client.CoreV1Api, ns: str, op: str, name: str, value: int) -> object | None:
    """Run one operation; the changed object, or None when the server refused it."""
    try:
        if op == "create":
            return core.create_namespaced_config_map(
                ns, {"metadata": {"name": name}, "data": {"v": str(value)}}
            )
        if op == "update":
            cur = core.read_namespaced_config_map(name, ns)
            cur.data = {"v": str(value)}
            return core.replace_namespaced_config_map(name, ns, cur)
        if op == "patch":
            return core.patch_namespaced_config_map(name, ns, {"data": {"w": str(value)}})
        return core.delete_namespaced_config_map(name, ns)
    except client.ApiException as exc:
        if exc.status not in (404, 409):
            raise
        return None


@SETTINGS
@given(ops=OPS)
def test_rv_increase_and_watch_replays_exactly(
    apiserver: testing.RunningServer, api_client: client.ApiClient, ops: list[tuple[str, str, int]]
) -> None:
    core = client.CoreV1Api(api_client)
    ns = testing.unique_name("prop")
    core.create_namespace({"metadata": {"name": ns}})
    start = core.list_namespaced_config_map(ns).metadata.resource_version
    last = int(start)
    expected: list[tuple[str, str, str]] = []
    live: dict[str, str] = {}
    for op, name, value in ops:
        before = dict(live)
        result = _apply(core, ns, op, name, value)
        if result is None:
            continue
        if op == "delete":
            live.pop(name, None)
            # The client returns a Status for an immediate delete; the watch carries the RV.
            expected.append(("DELETED", name, ""))
            continue
        rv = int(result.metadata.resource_version)  # type: ignore[attr-defined]
        if rv == int(before.get(name, "0") or 0):
            continue  # a no-op update: nothing written
        assert rv > last, "resourceVersions strictly increase"
        last = rv
        live[name] = str(rv)
        expected.append(("ADDED" if name not in before else "MODIFIED", name, str(rv)))
    seen: list[tuple[str, str, str]] = []
    if expected:
        w = watch.Watch()
        for ev in w.stream(
            core.list_namespaced_config_map, ns, resource_version=start, timeout_seconds=5
        ):
            obj = ev["object"]
            rv = obj.metadata.resource_version
            seen.append((ev["type"], obj.metadata.name, "" if ev["type"] == "DELETED" else rv))
            if len(seen) == len(expected):
                w.stop()
    assert seen == expected
    core.delete_namespace(ns)


def test_concurrent_cas_writers_lose_no_update(
    api_client: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "ctr"}, "data": {"n": "0"}})
    writers, increments = 6, 15
    conflicts = [0] * writers

    def writer(i: int) -> None:
        own = client.CoreV1Api(client.ApiClient(api_client.configuration))
        for _ in range(increments):
            while True:
                cur = own.read_namespaced_config_map("ctr", namespace)
                cur.data["n"] = str(int(cur.data["n"]) + 1)
                try:
                    own.replace_namespaced_config_map("ctr", namespace, cur)
                    break
                except client.ApiException as exc:
                    if exc.status != 409:
                        raise
                    conflicts[i] += 1

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    final = core.read_namespaced_config_map("ctr", namespace)
    assert final.data["n"] == str(writers * increments)
