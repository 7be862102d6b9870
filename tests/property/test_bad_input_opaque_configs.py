"""Malformed opaque configs in allocated ResourceClaims, prepared through the plugin over gRPC:
each claim fails alone with an error naming the claim and the field, nothing is written for it
(no CDI spec, no checkpoint entry, no node label), and the plugin keeps serving."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from computedomain.api import configs, names
from computedomain.api.errors import ConfigError
from computedomain.proto import dra
from tests.faults import harness
from tests.faults import settings as suite
from tests.integration.kubeletplugin.conftest import DRIVER_NAMESPACE, ref

CONFIG = "status.allocation.devices.config[0]"
MISSING = object()


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.NodeThread]:
    root = Path(tempfile.mkdtemp(prefix="kb-", dir="/tmp"))
    running = harness.NodeThread(tmp_path_factory.mktemp("opaque"), root / "n").start()
    yield running
    running.stop()
    shutil.rmtree(root, ignore_errors=True)


ANY_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=8),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(),
                                                         max_size=2),
)  # fmt: skip
DOMAIN_IDS = st.one_of(
    st.sampled_from(["", ".", "..", "../etc", "a/b", "a\x00b", "-x", " x", "x" * 300, "ü"]),
    st.text(min_size=1, max_size=20),
    st.uuids().map(str),  # well formed, but no such domain
    ANY_VALUE,
)


def with_value(field: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[str, Any]]:
    return st.tuples(st.just(field), st.one_of(st.just(MISSING), values))


@st.composite
def parameters(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A request kind and the opaque parameters of its config, some fields broken."""
    kind = draw(st.sampled_from(["channel", "daemon"]))
    params: dict[str, Any] = {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.CHANNEL_CONFIG_KIND if kind == "channel" else names.DAEMON_CONFIG_KIND,
        "domainID": "DOMAIN",
    }
    changes = draw(
        st.lists(
            st.one_of(
                with_value("apiVersion", st.sampled_from(["resource.nvidia.com/v1"]) | ANY_VALUE),
                with_value(
                    "kind",
                    st.sampled_from([names.CHANNEL_CONFIG_KIND, names.DAEMON_CONFIG_KIND, "Gpu"])
                    | ANY_VALUE,
                ),
                with_value("domainID", DOMAIN_IDS),
                with_value("allocationMode", st.sampled_from(["Single", "All"]) | ANY_VALUE),
                st.tuples(st.text(min_size=1, max_size=10), ANY_VALUE),
            ),
            min_size=1,
            max_size=3,
        )
    )
    for field, value in changes:
        if value is MISSING:
            params.pop(field, None)
        else:
            params[field] = value
    return kind, params


def expected_field(params: dict[str, Any]) -> str | None:
    """The field the plugin's error must name, None when the config itself is valid."""
    try:
        configs.decode(params, strict=True)
    except ConfigError as exc:
        return f"{CONFIG}.opaque.parameters.{exc.field}"
    return None


@settings(
    max_examples=suite.examples(40, 400),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=parameters())
# A channel config on a daemon request, of no existing domain: the kind is refused before the
# domain is looked up (found by the long run of make faults).
@example(case=("daemon", {"apiVersion": names.GROUP_VERSION, "kind": names.CHANNEL_CONFIG_KIND,
                          "domainID": "0"}))  # fmt: skip
def test_bad_configs_fail_their_claim_and_write_nothing(
    node: harness.NodeThread, case: tuple[str, dict[str, Any]]
) -> None:
    kind, params = case
    domain_uid = node.domain["metadata"]["uid"]
    if params.get("domainID") == "DOMAIN":
        params["domainID"] = domain_uid
    world = node.cluster.world
    namespace = DRIVER_NAMESPACE if kind == "daemon" else None
    claim = node.call(world.claim(kind, domain_uid, namespace=namespace, parameters=params))
    uid = claim["metadata"]["uid"]
    field = expected_field(params)
    result: dra.PrepareResult = node.call(node.kubelet.prepare([ref(claim)], deadline=2.5))[uid]
    try:
        if field is None and not result.error:
            return  # a valid config of the existing domain: prepared (undone below)
        meta = claim["metadata"]
        assert result.error.startswith(
            f"error preparing devices for claim '{meta['namespace']}/{meta['name']}:{uid}': "
        ), result.error
        if field is not None:
            assert field in result.error, (field, result.error)
        elif (
            kind == "daemon"
            and params.get("kind") == names.DAEMON_CONFIG_KIND
            and params.get("domainID") != domain_uid
        ):
            # A daemon claim may come before the plugin's informer sees its new domain: it is
            # retried (its prepare has started: a checkpoint entry, no CDI spec yet), and the
            # error names the domain.
            assert f"compute domain not found: {params['domainID']}" in result.error
            assert "CDI spec file" not in harness.injected(node.root, uid)
            return
        else:  # valid but useless: another domain, or the wrong kind for the request
            assert f"{CONFIG}" in result.error, result.error
        assert harness.injected(node.root, uid) == []
        assert node.call(world.node_label()) is None
    finally:
        assert node.call(node.kubelet.unprepare([ref(claim)], deadline=5)) == {uid: ""}
        assert node.alive()


def test_the_plugin_still_prepares_good_claims(node: harness.NodeThread) -> None:
    domain_uid = node.domain["metadata"]["uid"]
    claim = node.call(node.cluster.world.claim("channel", domain_uid))
    uid = claim["metadata"]["uid"]
    result = node.call(node.kubelet.prepare([ref(claim)], deadline=10))[uid]
    assert result.error == ""
    assert node.call(node.kubelet.unprepare([ref(claim)], deadline=10)) == {uid: ""}
    assert harness.injected(node.root, uid) == []


def test_a_bad_claim_does_not_fail_its_batch(node: harness.NodeThread) -> None:
    domain_uid = node.domain["metadata"]["uid"]
    world = node.cluster.world
    good = node.call(world.claim("channel", domain_uid))
    bad = node.call(world.claim("channel", domain_uid, parameters={"kind": "Gpu"}))
    results = node.call(node.kubelet.prepare([ref(good), ref(bad)], deadline=10))
    assert results[good["metadata"]["uid"]].error == ""
    assert "opaque.parameters.apiVersion" in results[bad["metadata"]["uid"]].error
    node.call(node.kubelet.unprepare([ref(good), ref(bad)], deadline=10))
    assert uuid.UUID(good["metadata"]["uid"])
