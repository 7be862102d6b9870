"""FEATURE_GATES parsing, validation and rendering
(docs/compatibility.md#flags-environment-and-feature-gates)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from computedomain.api import featuregates as fg
from computedomain.api.errors import ConfigError


def test_defaults() -> None:
    features = fg.parse("")
    assert features.compute_domain_cliques
    assert features.imex_daemons_with_dns_names
    assert features.crash_on_nvlink_fabric_errors
    assert not features.enabled(fg.MPS_SUPPORT)
    assert features.enabled(fg.CONTEXTUAL_LOGGING)


def test_trailing_comma_whitespace_and_go_booleans() -> None:
    features = fg.parse(" ComputeDomainCliques = F , IMEXDaemonsWithDNSNames=1,,")
    assert not features.compute_domain_cliques
    assert features.imex_daemons_with_dns_names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Bogus=true", "unrecognized feature gate: Bogus"),
        ("ComputeDomainCliques", "missing bool value for ComputeDomainCliques"),
        ("ComputeDomainCliques=yes", "invalid value of ComputeDomainCliques=yes"),
        (
            "IMEXDaemonsWithDNSNames=false",
            "ComputeDomainCliques requires IMEXDaemonsWithDNSNames",
        ),
        ("DynamicMIG=true,MPSSupport=true", "DynamicMIG and MPSSupport are mutually exclusive"),
        ("DeviceMetadata=true", "DeviceMetadata requires PassthroughSupport"),
    ],
    ids=["unknown", "no-value", "bad-bool", "cliques-needs-dns", "mig-mps", "metadata"],
)
def test_errors_name_the_setting(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        fg.parse(text)
    assert info.value.field == "FEATURE_GATES"
    assert message in str(info.value)


def test_ip_mode_is_valid() -> None:
    features = fg.parse("IMEXDaemonsWithDNSNames=false,ComputeDomainCliques=false")
    assert not features.imex_daemons_with_dns_names
    assert not features.compute_domain_cliques


def test_all_alpha_enables_unset_alpha_gates_only() -> None:
    features = fg.parse("AllAlpha=true,DynamicMIG=false,NVMLDeviceHealthCheck=false")
    assert features.enabled(fg.TIME_SLICING_SETTINGS)
    assert features.enabled(fg.LOGGING_ALPHA_OPTIONS)
    assert not features.enabled(fg.DYNAMIC_MIG)


def test_render_is_sorted_complete_with_trailing_comma() -> None:
    rendered = fg.parse("ComputeDomainCliques=false").render()
    items = rendered.split(",")
    assert items[-1] == ""
    names = [item.split("=")[0] for item in items[:-1]]
    assert names == sorted(fg.KNOWN_GATES)
    assert "ComputeDomainCliques=false" in items
    assert rendered.startswith("AllAlpha=false,AllBeta=false,ComputeDomainCliques=false,")


@given(st.dictionaries(st.sampled_from(sorted(fg.KNOWN_GATES)), st.booleans()))
def test_render_parses_back_to_the_same_features(overrides: dict[str, bool]) -> None:
    text = ",".join(f"{k}={str(v).lower()}" for k, v in overrides.items())
    try:
        features = fg.parse(text)
    except ConfigError:
        return  # an invalid combination is rejected, which is tested above
    assert fg.parse(features.render()) == features


UPSTREAM_V05_ALPHA_GATES = (
    "HostManagedIMEXDaemon",
    "FabricManagerPartitioning",
    "DRAListTypeAttributes",
    "ConsumableShares",
)


@pytest.mark.parametrize("name", UPSTREAM_V05_ALPHA_GATES)
def test_gates_upstream_added_in_v05_are_accepted_and_default_off(name: str) -> None:
    assert not fg.parse("").enabled(name)
    assert fg.parse(f"{name}=true").enabled(name)
    assert fg.KNOWN_GATES[name].stage is fg.Stage.ALPHA


def test_upstream_charts_whole_gate_map_is_accepted() -> None:
    # The chart renders every key of its featureGates value, so a migrating operator's map
    # (every upstream gate, as the chart's example lists them) must parse.
    text = ",".join(f"{name}=false" for name in UPSTREAM_V05_ALPHA_GATES) + (
        ",ComputeDomainCliques=true,IMEXDaemonsWithDNSNames=true,CrashOnNVLinkFabricErrors=true,"
        "TimeSlicingSettings=false,MPSSupport=false,PassthroughSupport=false,DynamicMIG=false,"
        "NVMLDeviceHealthCheck=false,DeviceMetadata=false,"
    )
    assert fg.parse(text) == fg.parse("")
