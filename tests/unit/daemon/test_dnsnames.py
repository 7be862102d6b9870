"""Names and mappings computed from the membership list."""

from __future__ import annotations

import attrs
import pytest

from computedomain.api.models import DaemonInfo
from computedomain.daemon import dnsnames
from computedomain.policies import builtins

CLIQUE = "7c5a1f4e-2b8d-4e6a-9f3c-1d2e3f4a5b6c.1"
OTHER = "7c5a1f4e-2b8d-4e6a-9f3c-1d2e3f4a5b6c.2"
POLICY = builtins.UpstreamDnsNames()


def entry(node: str, index: int, ip: str, clique: str = CLIQUE) -> DaemonInfo:
    return DaemonInfo(node_name=node, ip_address=ip, clique_id=clique, index=index)


def host_map(*entries: DaemonInfo, limit: int = 18) -> dnsnames.HostMap:
    return dnsnames.host_map(
        entries, clique_id=CLIQUE, node_name="me", pod_ip="10.0.0.1", policy=POLICY, limit=limit
    )


def test_nodes_config_lists_every_name_in_order() -> None:
    text = dnsnames.render_nodes_config(dnsnames.all_names(POLICY, 3))
    assert text == (
        "compute-domain-daemon-0000\ncompute-domain-daemon-0001\ncompute-domain-daemon-0002\n"
    )


def test_the_mapping_covers_the_own_clique_only_and_knows_the_own_index() -> None:
    result = host_map(
        entry("me", 2, "10.0.0.1"),
        entry("peer", 0, "10.0.0.2"),
        entry("far", 1, "10.0.1.1", clique=OTHER),
        entry("cpu", -1, "10.0.2.1", clique=""),
    )
    assert result.as_dict() == {
        "compute-domain-daemon-0000": "10.0.0.2",
        "compute-domain-daemon-0002": "10.0.0.1",
    }
    assert result.own_index == 2


def test_the_own_index_is_unknown_until_the_entry_carries_the_own_ip() -> None:
    assert host_map(entry("me", 2, "10.9.9.9")).own_index is None


def test_a_peer_index_change_with_the_same_ips_changes_the_mapping() -> None:
    # Hazard H1: upstream compares only the set of IPs and misses this; we compare mappings.
    before = host_map(entry("a", 0, "10.0.0.2"), entry("b", 1, "10.0.0.3"))
    after = host_map(entry("a", 1, "10.0.0.2"), entry("b", 0, "10.0.0.3"))
    assert before != after


@pytest.mark.parametrize("index", [-1, 18], ids=["negative", "at-limit"])
def test_an_out_of_range_index_of_the_own_clique_is_refused(index: int) -> None:
    with pytest.raises(dnsnames.IndexOutOfRange, match="peer"):
        host_map(entry("peer", index, "10.0.0.2"))


def test_a_policy_that_reuses_names_is_refused() -> None:
    @attrs.frozen
    class Mod2:
        name: str = "mod2"

        def dns_name(self, index: int) -> str:
            return f"imex-{index % 2}"

    with pytest.raises(dnsnames.DuplicateName, match="'mod2'"):
        dnsnames.all_names(Mod2(), 3)


def test_ip_mode_lists_the_own_cliques_ips_in_list_order() -> None:
    entries = (
        entry("b", 0, "10.0.0.3"),
        entry("x", 0, "10.1.0.1", OTHER),
        entry("a", 1, "10.0.0.2"),
    )
    assert dnsnames.clique_ips(entries, CLIQUE) == ("10.0.0.3", "10.0.0.2")


def test_slot_mapping_gives_every_slot_in_index_order() -> None:
    mapping = dnsnames.slot_mapping(
        host_map(entry("b", 2, "10.0.0.3"), entry("me", 0, "10.0.0.1")),
        dnsnames.all_names(POLICY, 4),
    )
    assert list(mapping.items()) == [
        ("compute-domain-daemon-0000", "10.0.0.1"),
        ("compute-domain-daemon-0001", "127.0.0.2"),
        ("compute-domain-daemon-0002", "10.0.0.3"),
        ("compute-domain-daemon-0003", "127.0.0.2"),
    ]
