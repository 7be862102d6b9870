"""Label selectors: the server's parsing and matching agree with a reference model, both in
process and through list requests against the running server."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from computedomain_sim.apiserver import testing
from computedomain_sim.apiserver.selectors import parse_labels

KEYS = st.sampled_from(["app", "tier", "example.com/role", "v"])
VALUES = st.sampled_from(["a", "b", "c", "1", "2"])
LABELS = st.dictionaries(KEYS, VALUES, max_size=4)

# A requirement: (key, op, values) with op in the reference model's vocabulary.
REQUIREMENT = st.one_of(
    st.tuples(KEYS, st.sampled_from(["=", "==", "!="]), VALUES.map(lambda v: (v,))),
    st.tuples(
        KEYS, st.sampled_from(["in", "notin"]), st.lists(VALUES, min_size=1, max_size=3).map(tuple)
    ),
    st.tuples(KEYS, st.sampled_from(["exists", "!"]), st.just(())),
)
SELECTOR = st.lists(REQUIREMENT, max_size=3)


def render(reqs: list[tuple[str, str, tuple[str, ...]]]) -> str:
    parts = []
    for key, op, values in reqs:
        if op == "exists":
            parts.append(key)
        elif op == "!":
            parts.append(f"!{key}")
        elif op in ("in", "notin"):
            parts.append(f"{key} {op} ({','.join(values)})")
        else:
            parts.append(f"{key}{op}{values[0]}")
    return ",".join(parts)


def reference(reqs: list[tuple[str, str, tuple[str, ...]]], labels: dict[str, str]) -> bool:
    for key, op, values in reqs:
        have = labels.get(key)
        ok = {
            "=": have == values[0] if values else False,
            "==": have == values[0] if values else False,
            "!=": have != values[0] if values else True,
            "in": have in values,
            "notin": have not in values,
            "exists": have is not None,
            "!": have is None,
        }[op]
        if not ok:
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(reqs=SELECTOR, labels=LABELS)
def test_parser_matches_reference(
    reqs: list[tuple[str, str, tuple[str, ...]]], labels: dict[str, str]
) -> None:
    assert parse_labels(render(reqs)).matches(labels) is reference(reqs, labels)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(objects=st.lists(LABELS, min_size=1, max_size=6), reqs=SELECTOR)
def test_server_list_matches_reference(
    api_client: client.ApiClient,
    objects: list[dict[str, str]],
    reqs: list[tuple[str, str, tuple[str, ...]]],
) -> None:
    core = client.CoreV1Api(api_client)
    ns = testing.unique_name("sel")
    core.create_namespace({"metadata": {"name": ns}})
    for i, labels in enumerate(objects):
        core.create_namespaced_config_map(ns, {"metadata": {"name": f"o{i}", "labels": labels}})
    got = {
        c.metadata.name
        for c in core.list_namespaced_config_map(ns, label_selector=render(reqs)).items
    }
    want = {f"o{i}" for i, labels in enumerate(objects) if reference(reqs, labels)}
    assert got == want
    core.delete_namespace(ns)
