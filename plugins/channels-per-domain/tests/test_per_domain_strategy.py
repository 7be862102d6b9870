"""The ``per-domain`` channel strategy: a domain's home channel, never another domain's."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import pytest
from computedomain_channels_per_domain import NAME, PerDomainChannel, home_channel, probe_order
from computedomain_channels_per_domain.hooks import plugin

from computedomain.policies import ChannelRequest, ChannelStrategy, registry

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


def answer(
    domain: str, in_use: Mapping[str, set[int]], channel_count: int = 2048
) -> tuple[int, ...]:
    return tuple(STRATEGY.channels(request(domain, in_use, channel_count)))


def test_a_domain_gets_its_home_channel_on_every_node_where_it_is_free() -> None:
    home = home_channel("cd-a", 2048)
    assert 1 <= home < 2048
    assert answer("cd-a", {}) == (home,)
    assert answer("cd-a", {"cd-b": {home_channel("cd-b", 2048)}}) == (home,)


def test_homes_are_sha256_of_the_domain_id_and_spread_out() -> None:
    digest = hashlib.sha256(b"cd-a").digest()
    assert home_channel("cd-a", 2048) == 1 + int.from_bytes(digest[:8], "big") % 2047
    homes = {home_channel(f"00000000-0000-0000-0000-{i:012d}", 2048) for i in range(100)}
    assert len(homes) > 90  # distinct domains rarely share a home


def test_a_taken_home_probes_to_the_next_channel_then_wraps_and_ends_at_zero() -> None:
    home = home_channel("cd-b", 8)
    assert answer("cd-b", {"cd-a": {home}}, channel_count=8) == (home % 7 + 1,)
    assert list(probe_order("cd-b", 8)) == [1 + (home - 1 + i) % 7 for i in range(7)] + [0]
    assert answer("cd-b", {"cd-a": set(range(1, 8))}, channel_count=8) == (0,)


def test_a_domain_keeps_the_channel_its_other_claims_hold() -> None:
    assert answer("cd-b", {"cd-a": {0}, "cd-b": {5}}) == (5,)


def test_of_several_own_channels_the_lowest_is_shared() -> None:
    # e.g. after an operator switched this domain from All to per-domain
    assert answer("cd-b", {"cd-a": {0}, "cd-b": {0, 3, 4}}) == (3,)


def test_an_own_channel_another_domain_also_holds_is_not_reused() -> None:
    # channel 0 was handed out by the built-in Single strategy to both domains
    assert answer("cd-b", {"cd-a": {0}, "cd-b": {0}}) == (home_channel("cd-b", 2048),)


def test_channels_outside_the_node_are_never_returned() -> None:
    assert answer("cd-b", {"cd-b": {9}}, channel_count=4) == (home_channel("cd-b", 4),)
    assert answer("cd-b", {"cd-a": {1, 2, 3, 7}}, channel_count=4) == (0,)
    assert answer("cd-b", {}, channel_count=1) == (0,)


@pytest.mark.parametrize(
    ("in_use", "count"),
    [({"cd-a": {0}, "cd-b": {1}}, 2), ({}, 0), ({"cd-a": {0, 1, 2, 3}}, 4)],
    ids=["two-domains-two-channels", "no-channels", "one-domain-holds-all"],
)
def test_an_exhausted_node_gives_no_channel(in_use: Mapping[str, set[int]], count: int) -> None:
    assert answer("cd-new", in_use, channel_count=count) == ()


def test_the_allocation_mode_does_not_matter() -> None:
    single = request("cd-b", {"cd-a": {0}})
    all_mode = ChannelRequest("All", "cd-b", "claim", single.in_use, single.channel_count)
    assert tuple(STRATEGY.channels(all_mode)) == tuple(STRATEGY.channels(single))


def test_the_strategy_object_is_a_channel_strategy() -> None:
    assert isinstance(STRATEGY, ChannelStrategy)
    assert STRATEGY.name == NAME == "per-domain"


def test_the_hook_registers_the_strategy_by_name() -> None:
    policies = registry.load(entry_points=False, extra=[plugin])
    assert policies.channels.names() == ["All", "Single", "per-domain"]
    assert policies.channels.get("per-domain") == PerDomainChannel()
