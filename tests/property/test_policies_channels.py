"""Channel allocation strategies, for every strategy in the ``computedomain`` group.

The contract of :class:`~computedomain.policies.hookspecs.ChannelStrategy` that the kubelet
plugin builds on: every channel in ``[0, channel_count)``, no channel twice, the same answer for
the same request and whatever the order of ``in_use``. Isolation between domains on a node is
enforced around the strategy (prepare refuses a channel another domain's claim holds,
:mod:`computedomain.kubeletplugin.state`); a strategy that promises it must also keep it
itself: ``per-domain`` (plugins/channels-per-domain) never answers a channel another domain
holds while one is free. A strategy that breaks the contract is shown to fail the same checks.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computedomain.policies import registry
from computedomain.policies.hookspecs import ChannelRequest, ChannelStrategy, hookimpl

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STRATEGIES = registry.load().channels
ISOLATING = frozenset({"per-domain"})  # strategies that keep domains apart themselves
domains = st.sampled_from(["cd-a", "cd-b", "cd-c", "cd-d"])


@st.composite
def requests(draw: st.DrawFn) -> ChannelRequest:
    count = draw(st.integers(min_value=0, max_value=40))
    in_use = draw(
        st.dictionaries(domains, st.frozensets(st.integers(min_value=0, max_value=45)), max_size=4)
    )
    return ChannelRequest(
        allocation_mode=draw(st.sampled_from(["Single", "All", None])),
        domain_id=draw(domains),
        claim_uid="claim",
        in_use=in_use,
        channel_count=count,
    )


def check_contract(strategy: ChannelStrategy) -> None:
    """Run the contract checks against ``strategy``; raises AssertionError on a violation."""

    @SETTINGS
    @given(requests(), st.randoms(use_true_random=False))
    def contract(request: ChannelRequest, rnd: object) -> None:
        answer = list(strategy.channels(request))
        assert all(0 <= c < request.channel_count for c in answer), answer
        assert len(set(answer)) == len(answer), f"{strategy.name} repeated a channel"
        items = list(request.in_use.items())
        rnd.shuffle(items)  # type: ignore[attr-defined]
        assert list(strategy.channels(attrs.evolve(request, in_use=dict(items)))) == answer
        assert list(strategy.channels(request)) == answer  # pure
        if strategy.name in ISOLATING:
            others = set().union(
                *(held for d, held in request.in_use.items() if d != request.domain_id)
            )
            assert not set(answer) & others, f"{strategy.name} gave another domain's channel"
            if any(c not in others for c in range(request.channel_count)):
                assert answer, f"{strategy.name} found no channel though one is free"

    contract()


@pytest.mark.parametrize("name", STRATEGIES.names())
def test_every_registered_strategy_keeps_the_contract(name: str) -> None:
    check_contract(STRATEGIES.get(name))


@attrs.frozen
class _OffByOne:
    name: str = "off-by-one"

    def channels(self, request: ChannelRequest) -> Sequence[int]:
        return (request.channel_count,)


class _BrokenPlugin:
    @hookimpl
    def computedomain_channel_strategies(self) -> Sequence[ChannelStrategy]:
        return (_OffByOne(),)


def test_a_strategy_outside_the_node_fails_the_checks() -> None:
    broken = registry.load(extra=[_BrokenPlugin()]).channels.get("off-by-one")
    with pytest.raises(AssertionError):
        check_contract(broken)


def test_the_example_plugin_is_among_the_checked_strategies() -> None:
    assert set(STRATEGIES.names()) >= ISOLATING
