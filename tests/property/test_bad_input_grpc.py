"""Random claim references in the kubelet's gRPC calls — empty UIDs, huge and unicode names,
path-like names, duplicates, a UID that does not match the API object: each bad claim gets its
own error naming it, a good claim in the same batch still succeeds, nothing is written for the
bad ones, what was prepared stays prepared, and the plugin keeps serving."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computedomain.proto import dra
from tests.faults import harness
from tests.faults import settings as suite
from tests.integration.kubeletplugin.conftest import DRIVER_NAMESPACE, ref

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
NAMES = st.one_of(
    st.sampled_from(["", ".", "..", "a/b", "../x", "%2F", "x" * 300, "ü-claim", "UPPER", " "]),
    TEXT,
)
UIDS = st.one_of(
    st.sampled_from(["", ".", "..", "../etc", "a/b", "x" * 300, "ü"]), st.uuids().map(str), TEXT
)
SETTINGS = settings(
    max_examples=suite.examples(40, 400),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@attrs.frozen
class Node:
    """A node with one daemon claim prepared (``kept``: it must stay prepared) and one channel
    claim (``good``) that a batch may include as its good claim."""

    thread: harness.NodeThread
    kept: dict[str, Any]
    good: dict[str, Any]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    root = Path(tempfile.mkdtemp(prefix="kg-", dir="/tmp"))
    running = harness.NodeThread(tmp_path_factory.mktemp("grpc"), root / "n").start()
    try:
        uid = running.domain["metadata"]["uid"]
        world = running.cluster.world
        kept = running.call(world.claim("daemon", uid, namespace=DRIVER_NAMESPACE))
        good = running.call(world.claim("channel", uid))
        result = running.call(running.kubelet.prepare([ref(kept)], deadline=10))
        assert result[kept["metadata"]["uid"]].error == ""
        yield Node(running, kept, good)
    finally:
        running.stop()
        shutil.rmtree(root, ignore_errors=True)


@st.composite
def refs(draw: st.DrawFn, real: dict[str, Any]) -> list[dra.ClaimRef]:
    """1-5 bad references, some of them duplicated, some naming the real claim."""
    meta = real["metadata"]
    found = []
    for _ in range(draw(st.integers(1, 5))):
        shape = draw(st.sampled_from(["random", "wrong-uid", "wrong-namespace"]))
        if shape == "random":
            found.append(dra.ClaimRef(draw(NAMES), draw(UIDS), draw(NAMES)))
        elif shape == "wrong-uid":
            uid = draw(UIDS.filter(lambda u: u != meta["uid"]))
            found.append(dra.ClaimRef(meta["namespace"], uid, meta["name"]))
        else:
            namespace = draw(NAMES.filter(lambda n: n != meta["namespace"]))
            found.append(dra.ClaimRef(namespace, draw(UIDS), meta["name"]))
    return found + draw(st.lists(st.sampled_from(found), max_size=2))


def state(node: Node) -> tuple[Any, Any]:
    root = node.thread.root
    return harness.read_checkpoint(root).claims, sorted(harness.cdi_specs(root))


@SETTINGS
@given(data=st.data())
def test_bad_references_fail_alone_and_change_nothing(node: Node, data: st.DataObject) -> None:
    good = node.good
    bad = data.draw(refs(good))
    with_good = data.draw(st.booleans())
    batch = [*bad, ref(good)] if with_good else bad
    before = state(node)
    results = node.thread.call(node.thread.kubelet.prepare(batch, deadline=5))
    good_uid = good["metadata"]["uid"]
    assert set(results) == {r.uid for r in batch}  # one answer per claim UID
    for item in bad:
        if item.uid == good_uid:
            continue  # shares its UID with the good claim: one answer for both
        error = results[item.uid].error
        assert error.startswith("error preparing devices for claim '"), error
        assert f":{item.uid}'" in error, error
    if with_good:
        assert results[good_uid].error == ""
        assert node.thread.call(node.thread.kubelet.unprepare([ref(good)], deadline=5)) == {
            good_uid: ""
        }
    assert state(node) == before  # nothing written for a bad claim, nothing lost
    assert node.thread.alive()


@SETTINGS
@given(uids=st.lists(UIDS, min_size=1, max_size=4))
def test_unprepare_of_unknown_or_malformed_uids(node: Node, uids: list[str]) -> None:
    kept_uid = node.kept["metadata"]["uid"]
    batch = [dra.ClaimRef("ns", u, "claim") for u in uids if u != kept_uid]
    if not batch:
        return
    before = state(node)
    errors = node.thread.call(node.thread.kubelet.unprepare(batch, deadline=5))
    assert set(errors) == {r.uid for r in batch}
    for item in batch:
        error = errors[item.uid]
        assert error == "" or error.startswith(
            f"error unpreparing devices for claim 'ns/claim:{item.uid}': uid: "
        ), error
    assert state(node) == before
    assert node.thread.alive()
