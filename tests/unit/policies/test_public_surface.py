"""The public surface for plugin authors is declared, and a change to it is deliberate.

``computedomain.policies`` declares in ``__all__`` what a plugin may import: a name made public
without being declared (or declared without existing) fails here, as httpx guards its exported
names. The hooks and the requests a policy receives are part of that surface too: their names
and fields are pinned below, so that changing what plugins are given means changing this test.
"""

from __future__ import annotations

import inspect

import attrs

from computedomain import policies
from computedomain.api.errors import ConfigError
from computedomain.policies import hookspecs


def _public(module: object) -> list[str]:
    return sorted(
        (
            name
            for name, value in vars(module).items()
            if not name.startswith("_") and not inspect.ismodule(value)
        ),
        key=str.casefold,
    )


def test_the_package_exports_exactly_what_it_declares() -> None:
    assert sorted(policies.__all__, key=str.casefold) == _public(policies)


def test_the_surface_is_the_hook_specifications_and_the_config_error() -> None:
    for name in set(policies.__all__) - {"ConfigError"}:
        assert getattr(policies, name) is getattr(hookspecs, name)
    assert policies.ConfigError is ConfigError


def test_the_hooks_and_what_they_receive_are_pinned() -> None:
    hooks = sorted(n for n in vars(hookspecs.HookSpecs) if n.startswith("computedomain_"))
    assert hooks == [
        "computedomain_channel_strategies",
        "computedomain_dns_name_policies",
        "computedomain_index_policies",
    ]
    fields = {
        model.__name__: [f.name for f in attrs.fields(model)]
        for model in (policies.IndexRequest, policies.ChannelRequest, policies.Deferred)
    }
    assert fields == {
        "IndexRequest": ["node_name", "used", "limit", "previous"],
        "ChannelRequest": [
            "allocation_mode",
            "domain_id",
            "claim_uid",
            "in_use",
            "channel_count",
        ],
        "Deferred": ["name", "build"],
    }
    methods = {
        protocol.__name__: sorted(
            n for n in vars(protocol) if not n.startswith("_") and n != "name"
        )
        for protocol in (policies.IndexPolicy, policies.DnsNamePolicy, policies.ChannelStrategy)
    }
    assert methods == {
        "IndexPolicy": ["allocate"],
        "DnsNamePolicy": ["dns_name"],
        "ChannelStrategy": ["channels"],
    }
