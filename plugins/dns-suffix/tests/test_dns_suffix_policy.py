"""The ``suffix`` DNS-name policy: names, suffix validation, configuration from the environment."""

from __future__ import annotations

import pytest
from computedomain_dns_suffix import (
    DEFAULT_SUFFIX,
    ENV_SUFFIX,
    MAX_INDEX,
    NAME,
    SuffixDnsNames,
    from_environment,
)
from computedomain_dns_suffix.hooks import plugin

from computedomain.policies import ConfigError, DnsNamePolicy, registry


def test_names_put_upstreams_name_under_the_suffix() -> None:
    policy = SuffixDnsNames("imex.example.com")
    assert policy.dns_name(3) == "compute-domain-daemon-0003.imex.example.com"
    assert policy.dns_name(17) == "compute-domain-daemon-0017.imex.example.com"
    assert policy.dns_name(12345) == "compute-domain-daemon-12345.imex.example.com"


def test_the_default_suffix_is_a_private_use_domain() -> None:
    assert DEFAULT_SUFFIX == "imex.internal"
    assert SuffixDnsNames().dns_name(0) == "compute-domain-daemon-0000.imex.internal"


@pytest.mark.parametrize("index", [-1, MAX_INDEX + 1, True], ids=["negative", "too-big", "bool"])
def test_indices_outside_the_range_are_refused(index: int) -> None:
    with pytest.raises(ValueError, match="outside"):
        SuffixDnsNames("example.com").dns_name(index)


def test_the_largest_index_still_gives_a_valid_length() -> None:
    longest = "a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 32
    policy = SuffixDnsNames(longest)
    assert len(policy.dns_name(MAX_INDEX)) == 253


@pytest.mark.parametrize(
    ("suffix", "reason"),
    [
        ("", "must not be empty"),
        ("example.com.", "must not end with '.'"),
        ("Example.com", "label 'Example'"),
        ("imex..example.com", "label ''"),
        ("-imex.example.com", "label '-imex'"),
        ("imex-.example.com", "label 'imex-'"),
        ("imex_1.example.com", "label 'imex_1'"),
        ("x" * 64 + ".com", "label 'xxxx"),
        (
            "a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 33,
            "is 225 characters long; at most 224",
        ),
        ("imex example", "label 'imex example'"),
    ],
    ids=[
        "empty",
        "trailing-dot",
        "upper-case",
        "empty-label",
        "leading-hyphen",
        "trailing-hyphen",
        "underscore",
        "long-label",
        "too-long",
        "space",
    ],
)
def test_bad_suffixes_are_refused_naming_the_variable(suffix: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        SuffixDnsNames(suffix)
    assert info.value.field == ENV_SUFFIX
    assert reason in info.value.reason


def test_the_suffix_comes_from_the_environment_when_built() -> None:
    assert from_environment({ENV_SUFFIX: "imex.example.com"}).suffix == "imex.example.com"
    assert from_environment({}).suffix == DEFAULT_SUFFIX


def test_the_hook_reads_the_environment_once_when_selected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV_SUFFIX, "before.example.com")
    catalog = registry.load(entry_points=False, extra=[plugin]).dns_names
    monkeypatch.setenv(ENV_SUFFIX, "rack1.imex.example.com")
    policy = catalog.get(NAME)
    monkeypatch.setenv(ENV_SUFFIX, "elsewhere.example.com")
    assert policy.dns_name(1) == "compute-domain-daemon-0001.rack1.imex.example.com"
    assert catalog.get(NAME) is policy
    assert isinstance(policy, DnsNamePolicy)


def test_a_bad_suffix_fails_only_when_the_policy_is_selected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV_SUFFIX, "Bad_Suffix")
    catalog = registry.load(entry_points=False, extra=[plugin]).dns_names
    assert catalog.names() == ["suffix", "upstream"]
    assert catalog.get("upstream").dns_name(1) == "compute-domain-daemon-0001"
    with pytest.raises(ConfigError, match=f"^{ENV_SUFFIX}: 'Bad_Suffix' is not a DNS subdomain"):
        catalog.get(NAME)
