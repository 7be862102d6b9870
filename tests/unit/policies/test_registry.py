"""Policies load from built-ins and plugins, by name, with clear errors."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest

from computedomain.api.errors import ConfigError
from computedomain.policies import builtins, registry
from computedomain.policies.hookspecs import (
    ChannelRequest,
    Deferred,
    DnsNamePolicies,
    DnsNamePolicy,
    IndexPolicy,
    IndexRequest,
    hookimpl,
)


def test_builtins_reproduce_upstream() -> None:
    policies = registry.load(entry_points=False)
    index = policies.index.get("lowest-free")
    assert index.allocate(IndexRequest("n", used={0: "a", 1: "b", 3: "c"}, limit=18)) == 2
    assert index.allocate(IndexRequest("n", used={i: str(i) for i in range(18)}, limit=18)) is None
    assert policies.dns_names.get("upstream").dns_name(17) == "compute-domain-daemon-0017"
    request = ChannelRequest("Single", "cd", "claim", in_use={}, channel_count=2048)
    assert tuple(policies.channels.get("Single").channels(request)) == (0,)
    assert tuple(policies.channels.get("All").channels(request)) == tuple(range(2048))


def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as info:
        registry.load(entry_points=False).index.get("nope")
    assert info.value.field == "INDEX_POLICY"
    assert "'nope'" in str(info.value)
    assert "valid: lowest-free" in str(info.value)


@attrs.frozen
class _Reverse:
    name: str = "reverse"

    def allocate(self, request: IndexRequest) -> int | None:
        free = [i for i in range(request.limit) if i not in request.used]
        return free[-1] if free else None


class _Plugin:
    @hookimpl
    def computedomain_index_policies(self) -> Sequence[IndexPolicy]:
        return (_Reverse(),)


class _Clash:
    @hookimpl
    def computedomain_dns_name_policies(self) -> Sequence[DnsNamePolicy]:
        return (builtins.UpstreamDnsNames(),)


def test_extra_plugin_adds_a_policy() -> None:
    policies = registry.load(entry_points=False, extra=[_Plugin()])
    assert policies.index.names() == ["lowest-free", "reverse"]
    assert policies.index.get("reverse").allocate(IndexRequest("n", {}, 18)) == 17


def test_two_plugins_claiming_one_name_are_refused() -> None:
    with pytest.raises(ConfigError, match="two plugins provide the DNS-name policy 'upstream'"):
        registry.load(entry_points=False, extra=[_Clash()])


@attrs.frozen
class _Named:
    name: str

    def dns_name(self, index: int) -> str:
        return f"host-{index}"


class _Configured:
    """A plugin whose policy reads a setting when built; ``setting`` is what it reads."""

    def __init__(self, setting: str) -> None:
        self.setting = setting
        self.builds = 0

    def _build(self) -> DnsNamePolicy:
        self.builds += 1
        if self.setting != "good":
            raise ConfigError("CD_TEST_SETTING", f"{self.setting!r} is not good")
        return _Named("configured")

    @hookimpl
    def computedomain_dns_name_policies(self) -> DnsNamePolicies:
        return (Deferred[DnsNamePolicy]("configured", self._build),)


class _Crashing:
    @hookimpl
    def computedomain_dns_name_policies(self) -> DnsNamePolicies:
        raise ConfigError("CD_EAGER_SETTING", "read too early and wrong")


def test_a_deferred_policy_is_built_once_and_only_when_selected() -> None:
    plugin = _Configured("good")
    catalog = registry.load(entry_points=False, extra=[plugin]).dns_names
    assert catalog.names() == ["configured", "upstream"]
    assert plugin.builds == 0
    assert catalog.get("upstream").dns_name(0) == "compute-domain-daemon-0000"
    assert plugin.builds == 0
    policy = catalog.get("configured")
    assert policy.dns_name(2) == "host-2"
    assert catalog.get("configured") is policy
    assert plugin.builds == 1


def test_a_bad_setting_fails_only_the_component_that_selects_the_policy() -> None:
    catalog = registry.load(entry_points=False, extra=[_Configured("bad")]).dns_names
    assert catalog.get("upstream").dns_name(1) == "compute-domain-daemon-0001"
    with pytest.raises(ConfigError) as info:
        catalog.get("configured")
    assert info.value.field == "CD_TEST_SETTING"
    assert "'bad' is not good" in info.value.reason


def test_a_deferred_policy_must_carry_its_name() -> None:
    class _Liar:
        @hookimpl
        def computedomain_dns_name_policies(self) -> DnsNamePolicies:
            return (Deferred[DnsNamePolicy]("promised", lambda: _Named("delivered")),)

    catalog = registry.load(entry_points=False, extra=[_Liar()]).dns_names
    with pytest.raises(ConfigError, match=r"'promised' was built as .*delivered"):
        catalog.get("promised")


def test_a_plugin_whose_hook_raises_is_named_only_when_its_policy_is_missing() -> None:
    policies = registry.load(entry_points=False, extra=[_Crashing(), _Plugin()])
    assert policies.dns_names.get("upstream").dns_name(0) == "compute-domain-daemon-0000"
    assert policies.index.names() == ["lowest-free", "reverse"]
    with pytest.raises(ConfigError) as info:
        policies.dns_names.get("eager")
    assert info.value.field == "DNS_NAME_POLICY"
    assert "unknown DNS-name policy 'eager' (valid: upstream)" in info.value.reason
    assert "failed to load: CD_EAGER_SETTING: read too early and wrong" in info.value.reason


def test_a_hook_that_returns_no_sequence_is_recorded_as_broken() -> None:
    class _Sloppy:
        @hookimpl
        def computedomain_index_policies(self) -> object:
            return None

    catalog = registry.load(entry_points=False, extra=[_Sloppy()]).index
    assert catalog.names() == ["lowest-free"]
    with pytest.raises(ConfigError, match="its hook returned None, not a sequence of index"):
        catalog.get("sloppy")
