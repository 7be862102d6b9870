"""Strict decoding of the opaque claim configs (docs/compatibility.md#opaque-configs)."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain.api import configs
from computedomain.api.errors import ConfigError, PermanentError

GV = "resource.nvidia.com/v1beta1"


def channel(**extra: object) -> dict[str, object]:
    return {"apiVersion": GV, "kind": "ComputeDomainChannelConfig", "domainID": "cd-1", **extra}


def test_channel_config_round_trip() -> None:
    cfg = configs.decode(channel(allocationMode="All"))
    assert cfg == configs.ChannelConfig(domain_id="cd-1", allocation_mode="All")
    assert isinstance(cfg, configs.ChannelConfig)
    assert cfg.wants_all_channels
    assert configs.decode(cfg.to_wire()) == cfg


def test_daemon_config_round_trip() -> None:
    cfg = configs.decode({"apiVersion": GV, "kind": "ComputeDomainDaemonConfig", "domainID": "u"})
    assert cfg == configs.DaemonConfig(domain_id="u")
    assert configs.decode(cfg.to_wire()) == cfg


@pytest.mark.parametrize(
    ("params", "field", "fragment"),
    [
        (channel(extra=1), "extra", "unknown field"),
        ({**channel(), "kind": "GpuConfig"}, "kind", "not a recognized configuration"),
        ({**channel(), "apiVersion": "v1"}, "apiVersion", "must be"),
        (channel(domainID=""), "domainID", "cannot be empty"),
        ({"apiVersion": GV, "kind": "ComputeDomainChannelConfig"}, "domainID", "cannot be empty"),
        (channel(domainID="../x"), "domainID", "not a single safe path component"),
        (channel(domainID="a/b"), "domainID", "not a single safe path component"),
        (channel(domainID=".."), "domainID", "not a single safe path component"),
        (channel(domainID=5), "domainID", "must be a string"),
        (channel(allocationMode=3), "allocationMode", "must be a string"),
        (
            '{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig",'
            '"domainID":"a","domainID":"b"}',
            "domainID",
            "duplicate field",
        ),
        ("[1]", "parameters", "JSON object"),
        ("{", "parameters", "not valid JSON"),
    ],
    ids=[
        "unknown-field",
        "wrong-kind",
        "wrong-api-version",
        "empty-domain",
        "missing-domain",
        "traversal",
        "slash",
        "dotdot",
        "non-string-domain",
        "non-string-mode",
        "duplicate-field",
        "not-object",
        "bad-json",
    ],
)
def test_bad_configs_name_the_field(params: object, field: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        configs.decode(params)  # type: ignore[arg-type]
    assert info.value.field == field
    assert fragment in str(info.value)
    assert isinstance(info.value, PermanentError)


def test_lenient_decoding_accepts_unknown_fields_and_any_domain() -> None:
    cfg = configs.decode(channel(extra=True, domainID="x/y"), strict=False)
    assert cfg == configs.ChannelConfig(domain_id="x/y")


def test_decodes_bytes() -> None:
    assert configs.decode(json.dumps(channel()).encode()) == configs.ChannelConfig("cd-1")


@given(st.dictionaries(st.text(max_size=8), st.none() | st.text(max_size=8) | st.integers()))
def test_decode_never_raises_anything_but_config_error(data: dict[str, object]) -> None:
    with contextlib.suppress(ConfigError):
        configs.decode({"apiVersion": GV, "kind": "ComputeDomainChannelConfig", **data})
