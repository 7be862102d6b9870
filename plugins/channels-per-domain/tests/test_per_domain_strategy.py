"""The ``per-domain`` channel strategy: one channel per domain on a node, never another's."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from computedomain_channels_per_domain import NAME, PerDomainChannel
from computedomain_channels_per_domain.hooks import plugin

from computedomain.policies import registry
from computedomain.policies.hookspecs import ChannelRequest, ChannelStrategy

STRATEGY = PerDomainChannel()


def request(
    domain: str, in_use: Mapping[str, set[int]], channel_count: int = 2048
) -> ChannelRequest:
    return ChannelRequest(
        allocation_mode="Single",
        domain_id=domain,
        claim_uid=f"claim-of-{domain}",
        in_use={d: frozenset(c) for d, c in in_use.items()},
        channel_count=channel_count,
    )


def test_the_first_domain_on_a_node_gets_channel_zero() -> None:
    assert tuple(STRATEGY.channels(request("cd-a", {}))) == (0,)


def test_a_second_domain_gets_the_lowest_channel_no_other_domain_holds() -> None:
    assert tuple(STRATEGY.channels(request("cd-b", {"cd-a": {0}}))) == (1,)
    assert tuple(STRATEGY.channels(request("cd-c", {"cd-a": {0}, "cd-b": {2}}))) == (1,)


def test_a_domain_keeps_the_channel_its_other_claims_hold() -> None:
    assert tuple(STRATEGY.channels(request("cd-b", {"cd-a": {0}, "cd-b": {5}}))) == (5,)


def test_of_several_own_channels_the_lowest_is_shared() -> None:
    # e.g. after an operator switched this domain from All to per-domain
    assert tuple(STRATEGY.channels(request("cd-b", {"cd-a": {0}, "cd-b": {0, 3, 4}}))) == (3,)


def test_an_own_channel_another_domain_also_holds_is_not_reused() -> None:
    # channel 0 was handed out by the built-in Single strategy to both domains
    assert tuple(STRATEGY.channels(request("cd-b", {"cd-a": {0}, "cd-b": {0}}))) == (1,)


def test_channels_outside_the_node_are_never_returned() -> None:
    assert tuple(STRATEGY.channels(request("cd-b", {"cd-b": {9}}, channel_count=4))) == (0,)
    assert tuple(STRATEGY.channels(request("cd-b", {"cd-a": {0, 1, 7}}, channel_count=4))) == (2,)


@pytest.mark.parametrize(
    ("in_use", "count"),
    [({"cd-a": {0}, "cd-b": {1}}, 2), ({}, 0), ({"cd-a": {0, 1, 2, 3}}, 4)],
    ids=["two-domains-two-channels", "no-channels", "one-domain-holds-all"],
)
def test_an_exhausted_node_gives_no_channel(in_use: Mapping[str, set[int]], count: int) -> None:
    assert tuple(STRATEGY.channels(request("cd-new", in_use, channel_count=count))) == ()


def test_the_allocation_mode_does_not_matter() -> None:
    single = request("cd-b", {"cd-a": {0}})
    all_mode = ChannelRequest("All", "cd-b", "claim", single.in_use, single.channel_count)
    assert tuple(STRATEGY.channels(all_mode)) == tuple(STRATEGY.channels(single)) == (1,)


def test_the_strategy_object_is_a_channel_strategy() -> None:
    assert isinstance(STRATEGY, ChannelStrategy)
    assert STRATEGY.name == NAME == "per-domain"


def test_the_hook_registers_the_strategy_by_name() -> None:
    policies = registry.load(entry_points=False, extra=[plugin])
    assert policies.channels.names() == ["All", "Single", "per-domain"]
    assert policies.channels.get("per-domain") == PerDomainChannel()
