"""Policies load from built-ins and plugins, by name, with clear errors."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest

from computedomain.api.errors import ConfigError
from computedomain.policies import builtins, registry
from computedomain.policies.hookspecs import (
    ChannelRequest,
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
