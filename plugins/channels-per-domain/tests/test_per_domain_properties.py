"""Hypothesis properties of ``per-domain``: distinct channels per domain on a node, in range.

Besides the single-call contract (and the probe order it follows), a random history of prepares
and unprepares on one node (each prepare seeing the other prepared claims, as the kubelet plugin
computes ``in_use``) must never let two domains hold the same channel, and gives every domain
one channel at a time.
"""

from __future__ import annotations

from computedomain_channels_per_domain import PerDomainChannel, home_channel, probe_order
from hypothesis import given, settings
from hypothesis import strategies as st

from computedomain.policies import ChannelRequest

STRATEGY = PerDomainChannel()
SETTINGS = settings(max_examples=200, deadline=None)

domains = st.sampled_from(["cd-a", "cd-b", "cd-c", "cd-d", "cd-e"])


@st.composite
def requests(draw: st.DrawFn) -> ChannelRequest:
    count = draw(st.integers(min_value=0, max_value=8))
    in_use = draw(
        st.dictionaries(domains, st.frozensets(st.integers(min_value=0, max_value=10)), max_size=5)
    )
    return ChannelRequest(
        allocation_mode=draw(st.sampled_from(["Single", "All", None])),
        domain_id=draw(domains),
        claim_uid="claim",
        in_use=in_use,
        channel_count=count,
    )


@SETTINGS
@given(requests())
def test_one_channel_in_range_that_no_other_domain_holds(request: ChannelRequest) -> None:
    answer = tuple(STRATEGY.channels(request))
    others = set().union(*(c for d, c in request.in_use.items() if d != request.domain_id))
    free = [c for c in range(request.channel_count) if c not in others]
    if not free:
        assert answer == ()
        return
    assert len(answer) == 1
    (channel,) = answer
    assert 0 <= channel < request.channel_count
    assert channel not in others
    own = request.in_use.get(request.domain_id, frozenset())
    if any(c in free for c in own):
        assert channel in own  # pods of one domain on a node share its channel
    else:  # the first free channel in the domain's probe order: its home when free
        order = list(probe_order(request.domain_id, request.channel_count))
        assert channel == next(c for c in order if c not in others)
    assert tuple(STRATEGY.channels(request)) == answer  # pure


@SETTINGS
@given(st.text(max_size=40), st.integers(min_value=0, max_value=3000))
def test_the_probe_order_is_every_channel_once_from_the_home_with_zero_last(
    domain: str, channel_count: int
) -> None:
    order = list(probe_order(domain, channel_count))
    assert sorted(order) == list(range(channel_count))
    if channel_count > 1:
        assert order[0] == home_channel(domain, channel_count) >= 1
        assert order[-1] == 0


prepare = st.tuples(st.just("prepare"), st.integers(0, 9), domains)
unprepare = st.tuples(st.just("unprepare"), st.integers(0, 9), st.just(""))


@SETTINGS
@given(st.lists(prepare | unprepare, max_size=50), st.integers(min_value=1, max_value=4))
def test_prepare_histories_keep_domains_apart(
    steps: list[tuple[str, int, str]], channel_count: int
) -> None:
    claims: dict[str, tuple[str, frozenset[int]]] = {}  # claim uid -> (domain, channels)
    for verb, n, domain in steps:
        uid = f"claim-{n}"
        if verb == "unprepare":
            claims.pop(uid, None)
            continue
        if uid in claims:  # prepare is idempotent: a prepared claim keeps its channel
            continue
        in_use: dict[str, set[int]] = {}
        for other_domain, held in claims.values():
            in_use.setdefault(other_domain, set()).update(held)
        request = ChannelRequest(
            "Single", domain, uid, {d: frozenset(c) for d, c in in_use.items()}, channel_count
        )
        answer = frozenset(STRATEGY.channels(request))
        if not answer:  # every channel belongs to other domains: the claim waits
            assert len({d for d in in_use if d != domain}) >= channel_count
            continue
        claims[uid] = (domain, answer)
        by_domain: dict[str, set[int]] = {}
        for holder, held in claims.values():
            by_domain.setdefault(holder, set()).update(held)
        assert all(len(held) == 1 for held in by_domain.values())  # one channel per domain
        holders = list(by_domain.values())
        assert len(set().union(*holders)) == len(holders)  # distinct across domains
        assert all(0 <= c < channel_count for held in holders for c in held)
