"""Bad checkpoint files where the plugin keeps its state: random bytes, truncated JSON, a wrong
checksum, an unknown version or format, well-checksummed documents of the wrong shape — ours or
upstream's. At startup each is moved aside (kept for diagnosis), reported as a Warning, and the
plugin starts clean; nothing else is ever raised, and the plugin never exits because of it."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kubeletplugin import checkpoint as cp
from computedomain.kubeletplugin import upstreamcheckpoint
from computedomain.kubeletplugin.checkpointstore import CheckpointStore, Startup
from computedomain.kubeletplugin.waitevents import REASON_CORRUPT_CHECKPOINT
from tests.faults import harness
from tests.faults import settings as suite
from tests.integration.kubeletplugin.conftest import ref
from tests.support.polling import eventually

BOOT = "4f6d3b2a-1111-2222-3333-444455556666"
SETTINGS = settings(
    max_examples=suite.examples(80, 800),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def good() -> cp.Checkpoint:
    device = cp.PreparedDevice(
        device="channel-0",
        pool="node-1",
        requests=("channel",),
        type=cp.DeviceType.CHANNEL,
        domain_id="d0",
        cdi_device_ids=("k8s.compute-domain.nvidia.com/claim=u1-channel-0",),
        channels=(0,),
    )
    entry = cp.ClaimEntry(cp.ClaimState.PREPARE_COMPLETED, "ns", "c", 1.0, (device,))
    return cp.Checkpoint(boot_id=BOOT, claims={"u1": entry}).aborted("u0", "ns", "d", 2.0)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=12,
)  # fmt: skip
FIELDS = ["state", "namespace", "name", "at", "devices", "device", "pool", "requests", "type",
          "domainID", "adminAccess", "cdiDeviceIDs", "channels"]  # fmt: skip
ABORTED_FIELDS = ["state", "namespace", "name", "at", "abortedAt"]


@st.composite
def checksummed(draw: st.DrawFn) -> bytes:
    """A document with our format, version and a right checksum, but any content."""
    body = json.loads(cp.encode(good()))
    body.pop("checksum")
    where = draw(
        st.sampled_from(["claims", "tombstones", "nodeBootID", "entry", "aborted", "device"])
    )
    value = draw(JSON)
    if where == "entry":
        body["claims"]["u1"][draw(st.sampled_from(FIELDS[:5]))] = value
    elif where == "aborted":
        aborted = body["claims"]["u0"]
        if draw(st.booleans()):
            del aborted["at"]  # abortedAt is read then
        aborted[draw(st.sampled_from(ABORTED_FIELDS))] = value
    elif where == "device":
        body["claims"]["u1"]["devices"][0][draw(st.sampled_from(FIELDS[5:]))] = value
    else:
        body[where] = value
    body["checksum"] = cp.checksum(body)
    return json.dumps(body).encode()


def truncated(data: bytes) -> st.SearchStrategy[bytes]:
    return st.integers(0, len(data) - 1).map(lambda n: data[:n])


def rewritten(change: dict[str, Any]) -> bytes:
    body = json.loads(cp.encode(good()))
    body.update(change)
    return json.dumps(body).encode()


BAD_FILES = st.one_of(
    st.binary(max_size=200),
    truncated(cp.encode(good())),
    st.just(rewritten({"nodeBootID": "another"})),  # checksum no longer matches
    st.integers().filter(lambda v: v != cp.VERSION).map(lambda v: rewritten({"version": v})),
    st.text(max_size=10).map(lambda f: rewritten({"format": f})),
    checksummed(),
    JSON.map(lambda v: json.dumps(v).encode()),
)


@pytest.fixture
def directory() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cp-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@SETTINGS
@given(data=BAD_FILES)
@example(data=b"")
@example(data=b"\xff\xfe")
def test_a_bad_checkpoint_is_moved_aside_and_the_plugin_starts_clean(
    directory: Path, data: bytes
) -> None:
    for leftover in directory.iterdir():
        leftover.unlink()
    path = directory / cp.FILE_NAME
    path.write_bytes(data)
    reported: list[tuple[Path, str]] = []
    store = CheckpointStore(path, on_corrupt=lambda moved, why: reported.append((moved, why)))
    result = store.load_at_startup(BOOT)  # raises nothing
    if result.outcome is not Startup.CORRUPT:
        cp.decode(data)  # only a valid document is kept
        return
    assert reported == [(result.moved_to, result.reason)]
    assert result.reason
    assert result.moved_to is not None
    assert result.moved_to.read_bytes() == data  # kept as it was, for diagnosis
    assert cp.decode(path.read_bytes()) == cp.Checkpoint(boot_id=BOOT)


@SETTINGS
@given(data=st.one_of(st.binary(max_size=200), JSON.map(lambda v: json.dumps(v).encode())))
def test_a_bad_upstream_checkpoint_is_set_aside_and_never_imported(
    directory: Path, data: bytes
) -> None:
    for leftover in directory.iterdir():
        leftover.unlink()
    theirs = directory / upstreamcheckpoint.FILE_NAME
    theirs.write_bytes(data)
    store = CheckpointStore(directory / cp.FILE_NAME)
    imported = store.import_upstream(theirs, now=1000.0)  # raises nothing
    if imported is None:
        assert not theirs.exists()
        (aside,) = directory.glob(f"{upstreamcheckpoint.FILE_NAME}.corrupt-*")
        assert aside.read_bytes() == data
        assert not (directory / cp.FILE_NAME).exists()


def test_the_plugin_starts_clean_over_a_corrupt_checkpoint(tmp_path: Path) -> None:
    """The whole plugin: the Warning on the Node, and it serves (a claim prepares)."""
    short = Path(tempfile.mkdtemp(prefix="kc-", dir="/tmp"))
    try:
        node = harness.NodeThread(tmp_path, short / "n")
        harness.checkpoint_path(node.root).parent.mkdir(parents=True)
        harness.checkpoint_path(node.root).write_bytes(b'{"format": "computedomain.kubelet')
        node.start()
        try:
            world = node.cluster.world
            uid = node.domain["metadata"]["uid"]
            claim = node.call(world.claim("channel", uid))
            result = node.call(node.kubelet.prepare([ref(claim)], deadline=10))
            assert result[claim["metadata"]["uid"]].error == ""

            async def warning() -> list[dict[str, Any]]:
                listing = await world.api.list(resources.EVENTS, "default")
                return [
                    e
                    for e in listing["items"]
                    if e["reason"] == REASON_CORRUPT_CHECKPOINT
                    and e["involvedObject"]["name"] == world.node
                ]

            (event,) = node.call(eventually(warning, what="the Warning event"))
            assert event["type"] == "Warning"
            assert "corrupt checkpoint moved aside to " in event["message"]
            aside = list(harness.checkpoint_path(node.root).parent.glob("*.corrupt-*"))
            assert len(aside) == 1
            assert node.alive()
            assert names.DRIVER_NAME in str(aside[0])
        finally:
            node.stop()
    finally:
        shutil.rmtree(short, ignore_errors=True)
