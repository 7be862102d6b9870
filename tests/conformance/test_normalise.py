"""The corpus's normalisation replaces exactly the values a server generates afresh: two runs
that differ only in those compare equal, and a difference in anything else survives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from . import normalise

OBJECT = {
    "metadata": {
        "name": "gen-x7k2p",
        "uid": "0f8fad5b-d9cb-469f-a165-70867728950e",
        "resourceVersion": "4711",
        "creationTimestamp": "2026-12-05T13:14:07Z",
        "ownerReferences": [{"uid": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "name": "owner"}],
        "annotations": {"deployment.kubernetes.io/revision": "1"},
    },
    "spec": {"clusterIP": "10.96.44.3", "ports": [{"port": 80, "nodePort": 31234}]},
    "data": {"a": "1"},
}


def test_generated_values_become_placeholders() -> None:
    out = normalise.data(OBJECT, generated=("gen-",))
    assert out["metadata"]["name"] == "gen-<gen>"
    assert out["metadata"]["uid"] == "<uid>"
    assert out["metadata"]["resourceVersion"] == "<rv>"
    assert out["metadata"]["creationTimestamp"] == "<time>"
    assert out["metadata"]["ownerReferences"] == [{"uid": "<uid>", "name": "owner"}]
    assert out["spec"] == {"clusterIP": "<ip>", "ports": [{"port": 80, "nodePort": "<port>"}]}
    assert out["data"] == {"a": "1"}


def test_drop_leaves_out_the_named_paths_only() -> None:
    out = normalise.data(OBJECT, drop=(("annotations", "deployment.kubernetes.io/revision"),))
    assert "annotations" not in out["metadata"], "a map emptied by the drop goes with it"
    assert out["data"] == {"a": "1"}


def test_tables_lose_ages_and_padding_but_keep_words() -> None:
    kube = "NAME      DATA   AGE\nkube-root-ca.crt   1      12s\nthree     1      3m4s\n"
    ours = "NAME   DATA   AGE\nkube-root-ca.crt   1   0s\nthree   1   1s\n"
    assert normalise.table(kube) == normalise.table(ours)
    assert normalise.table(kube) != normalise.table(ours.replace("three", "four"))


def test_messages_lose_the_servers_address_and_versions() -> None:
    a = 'Get "https://127.0.0.1:6443/api/v1": too old resource version: 1 (4711)'
    b = 'Get "https://127.0.0.1:39117/api/v1": too old resource version: 1 (12)'
    assert normalise.text(a) == normalise.text(b)


@given(st.dictionaries(st.sampled_from(["a", "b", "name", "kind"]), st.text(max_size=12)))
def test_data_without_generated_values_is_unchanged(data: dict[str, str]) -> None:
    plain = {k: v for k, v in data.items() if normalise.text(v) == v}
    assert normalise.data(plain) == plain


def test_output_is_parsed_when_asked_for_as_data() -> None:
    assert normalise.output('{"a": "2026-01-01T00:00:00Z"}', ["get", "-o", "json"], (), ()) == {
        "a": "<time>"
    }
    assert normalise.output("a: 1\n", ["get", "--output=yaml"], (), ()) == {"a": 1}
    assert normalise.output("x  1s\n", ["get"], (), ()) == "x  <age>"
