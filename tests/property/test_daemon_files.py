"""Per-daemon file state (invariants F1-F6, F8, F10, F11 of
docs/compatibility.md#membership-invariants), for every DNS-name policy.

Random membership lists and random pre-existing hosts files go through the real
:class:`~computedomain.daemon.imexsync.DnsSync` (which writes a real file); the store-level and
process invariants (F5 across daemons that read the API, F7, F9, P1-P3) are in
``test_daemon_membership.py``.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computedomain.api import names
from computedomain.api.models import DaemonInfo
from computedomain.daemon import dnsnames, hostsfile
from computedomain.daemon.imexsync import DnsSync, Snapshot
from computedomain.daemon.keeper import ImexInputs
from computedomain.policies import registry
from computedomain.policies.hookspecs import DnsNamePolicy

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
POLICIES = registry.load().dns_names
CLIQUE = "7c5a1f4e-2b8d-4e6a-9f3c-1d2e3f4a5b6c.1"
OTHER = "7c5a1f4e-2b8d-4e6a-9f3c-1d2e3f4a5b6c.2"
MAX = 6
ME = "node-me"
MY_IP = "10.9.9.9"

hostnames = st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True).filter(
    lambda n: not n.startswith("compute-domain-daemon")
)
other_lines = st.lists(
    st.one_of(
        st.tuples(st.ip_addresses(v=4).map(str), hostnames).map(lambda t: f"{t[0]}\t{t[1]}"),
        st.just(""),
        st.just("# a comment"),
        st.just("::1 localhost ip6-localhost"),
    ),
    max_size=5,
)
stale_lines = st.lists(
    st.one_of(
        st.just(names.HOSTS_HEADER),
        st.integers(0, MAX + 3).map(lambda i: f"10.7.7.7\t{names.dns_name(i)}"),
    ),
    max_size=4,
)


@st.composite
def memberships(draw: st.DrawFn, *, include_me: bool = True) -> tuple[DaemonInfo, ...]:
    indices = draw(st.lists(st.integers(0, MAX - 1), unique=True, min_size=1, max_size=MAX))
    entries = [DaemonInfo(f"node-{i}", f"10.0.0.{i + 1}", CLIQUE, index=i) for i in indices[1:]]
    if include_me:
        entries.append(DaemonInfo(ME, MY_IP, CLIQUE, index=indices[0]))
    entries += draw(
        st.lists(
            st.builds(
                DaemonInfo,
                node_name=st.from_regex(r"x[0-9]{1,3}", fullmatch=True),
                ip_address=st.ip_addresses(v=4).map(str),
                clique_id=st.sampled_from(["", OTHER]),
                index=st.integers(-1, 40),
            ),
            max_size=3,
        )
    )
    return tuple(draw(st.permutations(entries)))


class Harness:
    """One daemon's DnsSync on a real temporary hosts file."""

    def __init__(self, directory: Path, policy: DnsNamePolicy, initial: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "hosts"
        self.path.write_text(initial)
        self.wanted: list[ImexInputs] = []
        self.sync = DnsSync(
            hostsfile.HostsFile(self.path, in_place=False),
            self.wanted.append,
            clique_id=CLIQUE,
            node_name=ME,
            pod_ip=MY_IP,
            policy=policy,
            limit=MAX,
        )

    def apply(self, entries: tuple[DaemonInfo, ...]) -> None:
        asyncio.run(self.sync.apply(Snapshot(entries)))


def same_clique(entries: tuple[DaemonInfo, ...]) -> list[DaemonInfo]:
    return [e for e in entries if e.clique_id == CLIQUE]


@pytest.mark.parametrize("name", POLICIES.names())
def test_nodes_config_is_static_and_complete(name: str) -> None:
    policy = POLICIES.get(name)
    text = dnsnames.render_nodes_config(dnsnames.all_names(policy, MAX))
    assert text.splitlines(keepends=True) == [f"{policy.dns_name(i)}\n" for i in range(MAX)]  # F1


@pytest.mark.parametrize("name", POLICIES.names())
def test_hosts_file_holds_exactly_the_clique(name: str) -> None:
    policy = POLICIES.get(name)
    managed = frozenset(dnsnames.all_names(policy, MAX))

    @SETTINGS
    @given(memberships(), other_lines, stale_lines, st.randoms(use_true_random=False))
    def check(entries, others, stale, rnd) -> None:  # type: ignore[no-untyped-def]
        lines = others + stale
        rnd.shuffle(lines)
        with tempfile.TemporaryDirectory() as tmp:
            harness = Harness(Path(tmp), policy, "".join(f"{line}\n" for line in lines))
            harness.apply(entries)
            text = harness.path.read_text()
            rows = text.splitlines()
            mapping_rows = [r for r in rows if "\t" in r and r.split("\t")[1] in managed]
            ips = {e.index: e.ip_address for e in same_clique(entries)}
            expected = [
                f"{ips.get(i, names.HOSTS_SENTINEL_IP)}\t{policy.dns_name(i)}" for i in range(MAX)
            ]
            assert mapping_rows == expected  # F2: one line per slot, in index order
            assert rows.count(names.HOSTS_HEADER) == 1
            rest = [r for r in rows if r not in mapping_rows and r != names.HOSTS_HEADER]
            assert all(names.DNS_NAME_PREFIX not in r for r in rest)  # F3
            kept = [line for line in lines if line in others]
            assert rest == kept  # F4: every other line kept, in order
            by_name = dict(r.split("\t")[::-1] for r in mapping_rows)
            assert len(by_name) == len(mapping_rows)  # no name twice
            live = {k: v for k, v in by_name.items() if v != names.HOSTS_SENTINEL_IP}
            assert live == hostsfile.live_mapping(text, managed)
            assert len(set(live.values())) == len(live)  # F6: injective but for the sentinel
            own = policy.dns_name(next(e.index for e in entries if e.node_name == ME))
            assert by_name[own] == MY_IP
            assert harness.wanted[-1] == ImexInputs(
                identity=next(e.index for e in entries if e.node_name == ME),
                names=tuple(sorted(live.items())),
            )
            stamp = harness.path.stat().st_mtime_ns
            harness.sync.last = None  # forget the cache: the file itself must be compared
            harness.apply(entries)
            assert harness.path.read_text() == text  # F8: no change, no write
            assert harness.path.stat().st_mtime_ns == stamp

    check()


@pytest.mark.parametrize("name", POLICIES.names())
def test_daemons_reading_the_same_list_agree(name: str) -> None:
    policy = POLICIES.get(name)

    @SETTINGS
    @given(memberships(), other_lines, other_lines)
    def check(entries, first, second) -> None:  # type: ignore[no-untyped-def]
        with tempfile.TemporaryDirectory() as tmp:
            a = Harness(Path(tmp) / "a", policy, "".join(f"{line}\n" for line in first))
            b = Harness(Path(tmp) / "b", policy, "".join(f"{line}\n" for line in second))
            a.apply(entries)
            b.apply(entries)
            section = names.HOSTS_HEADER + "\n"
            tail_a = a.path.read_text().split(section, 1)[1]
            tail_b = b.path.read_text().split(section, 1)[1]
            assert tail_a == tail_b  # F5

    check()


@SETTINGS
@given(memberships(), st.sampled_from([-1, MAX, MAX + 5]))
def test_an_out_of_range_index_changes_no_file(entries, bad) -> None:  # type: ignore[no-untyped-def]
    policy = POLICIES.get("upstream")
    broken = (*entries, DaemonInfo("node-bad", "10.3.3.3", CLIQUE, index=bad))
    with tempfile.TemporaryDirectory() as tmp:
        harness = Harness(Path(tmp), policy, "127.0.0.1 localhost\n")
        harness.apply(entries)
        before = harness.path.read_text()
        with pytest.raises(dnsnames.IndexOutOfRange):
            harness.apply(broken)  # F10
        assert harness.path.read_text() == before
        assert len(harness.wanted) == 1


@SETTINGS
@given(memberships(include_me=False).filter(lambda es: len(same_clique(es)) >= 2))
def test_a_peer_index_swap_with_the_same_ips_rewrites_the_file(entries) -> None:  # type: ignore[no-untyped-def]
    # F11 inverted: upstream keys on the set of IPs and misses this (hazard H1); we do not.
    policy = POLICIES.get("upstream")
    mine = same_clique(entries)
    a, b = mine[0], mine[1]
    swapped = tuple(
        e.__class__(e.node_name, e.ip_address, e.clique_id, index=b.index)
        if e is a
        else e.__class__(e.node_name, e.ip_address, e.clique_id, index=a.index)
        if e is b
        else e
        for e in entries
    )
    with tempfile.TemporaryDirectory() as tmp:
        harness = Harness(Path(tmp), policy, "")
        harness.apply(entries)
        before = harness.path.read_text()
        harness.apply(swapped)
        after = harness.path.read_text()
        assert before != after
        assert f"{a.ip_address}\t{policy.dns_name(b.index)}\n" in after
        assert harness.wanted[-1].names != harness.wanted[0].names
