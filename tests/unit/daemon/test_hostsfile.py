"""The hosts file: managed lines replaced, every other line kept, written only on change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from computedomain.api import names
from computedomain.daemon import dnsnames, hostsfile
from computedomain.policies import builtins

KUBELET_HOSTS = (
    "# Kubernetes-managed hosts file.\n"
    "127.0.0.1\tlocalhost\n"
    "::1\tlocalhost ip6-localhost ip6-loopback\n"
    "\n"
    "10.0.0.7\tdaemon-pod-abc\n"
)
MANAGED = frozenset(names.dns_name(i) for i in range(4))


def test_appends_one_header_and_the_lines_in_the_order_given_after_the_kept_ones() -> None:
    text = hostsfile.render(
        KUBELET_HOSTS,
        {names.dns_name(1): "10.0.0.2", names.dns_name(0): "10.0.0.1"},
        MANAGED,
    )
    assert text == (
        KUBELET_HOSTS
        + "# Compute Domain Daemon mappings\n"
        + "10.0.0.2\tcompute-domain-daemon-0001\n"
        + "10.0.0.1\tcompute-domain-daemon-0000\n"
    )


def test_every_slot_in_index_order_with_unused_ones_at_the_sentinel() -> None:
    # Upstream's layout since 2026-09 (18 slots, one live): one line per slot.
    policy = builtins.UpstreamDnsNames()
    slot_names = dnsnames.all_names(policy, 18)
    live = dnsnames.HostMap(names=((names.dns_name(3), "10.0.0.4"),), own_index=3)
    text = hostsfile.render(
        KUBELET_HOSTS, dnsnames.slot_mapping(live, slot_names), frozenset(slot_names)
    )
    section = text.removeprefix(KUBELET_HOSTS).splitlines()
    assert section[0] == names.HOSTS_HEADER
    assert section[1:] == [
        f"{'10.0.0.4' if i == 3 else '127.0.0.2'}\tcompute-domain-daemon-{i:04d}" for i in range(18)
    ]
    assert hostsfile.live_mapping(text) == {names.dns_name(3): "10.0.0.4"}


def test_live_mapping_reads_managed_lines_without_the_sentinel() -> None:
    text = (
        "127.0.0.1 localhost\n"
        "10.0.0.1\tcompute-domain-daemon-0000\n"
        "127.0.0.2\tcompute-domain-daemon-0001\n"
        "10.0.0.3 imex-c # a policy's name\n"
        "10.0.0.9\tcompute-domain-daemon-0000\n"
    )
    assert hostsfile.live_mapping(text, frozenset({"imex-c"})) == {
        "compute-domain-daemon-0000": "10.0.0.1",
        "imex-c": "10.0.0.3",
    }


def test_rendering_twice_changes_nothing_more() -> None:
    mapping = {names.dns_name(0): "10.0.0.1"}
    once = hostsfile.render(KUBELET_HOSTS, mapping, MANAGED)
    assert hostsfile.render(once, mapping, MANAGED) == once


def test_old_mappings_duplicate_names_and_repeated_headers_are_replaced() -> None:
    # What upstream leaves behind after a few rewrites (H10) plus a duplicated name (#561).
    messy = (
        KUBELET_HOSTS
        + "# Compute Domain Daemon mappings\n\n"
        + "# Compute Domain Daemon mappings\n"
        + "10.0.0.9\tcompute-domain-daemon-0000\n"
        + "10.0.0.1\tcompute-domain-daemon-0000\n"
        + "10.0.0.5 compute-domain-daemon-0017 # stale\n"
    )
    text = hostsfile.render(messy, {names.dns_name(0): "10.0.0.1"}, MANAGED)
    assert text.count(names.HOSTS_HEADER) == 1
    assert text.count("compute-domain-daemon-0000") == 1
    assert "0017" not in text
    assert text.startswith(KUBELET_HOSTS + "\n")  # the kept blank line stays, only once


def test_an_empty_mapping_removes_the_section() -> None:
    full = hostsfile.render(KUBELET_HOSTS, {names.dns_name(0): "10.0.0.1"}, MANAGED)
    assert hostsfile.render(full, {}, MANAGED) == KUBELET_HOSTS


def test_names_of_another_policy_are_managed_by_name_not_by_prefix() -> None:
    managed = frozenset({"imex-a", "imex-b"})
    current = "127.0.0.1 localhost\n10.0.0.3 imex-b\n10.0.0.4 imex-bb\n"
    text = hostsfile.render(current, {"imex-a": "10.0.0.1"}, managed)
    assert text == (
        f"127.0.0.1 localhost\n10.0.0.4 imex-bb\n{names.HOSTS_HEADER}\n10.0.0.1\timex-a\n"
    )


def test_a_missing_final_newline_is_added_to_the_kept_line() -> None:
    text = hostsfile.render("127.0.0.1 localhost", {names.dns_name(0): "10.0.0.1"}, MANAGED)
    assert text.startswith("127.0.0.1 localhost\n# Compute")


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "rename"])
def test_update_writes_only_on_change(tmp_path: Path, in_place: bool) -> None:
    path = tmp_path / "hosts"
    path.write_text(KUBELET_HOSTS)
    hosts = hostsfile.HostsFile(path, in_place=in_place)
    mapping = {names.dns_name(0): "10.0.0.1"}

    def transform(current: str) -> str:
        return hostsfile.render(current, mapping, MANAGED)

    inode = path.stat().st_ino
    assert hosts.update(transform) is True
    assert (path.stat().st_ino == inode) is in_place  # in place keeps the bind-mounted inode
    assert path.read_text() == transform(KUBELET_HOSTS)
    before = path.stat()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns - 10**9))
    stamped = path.stat().st_mtime_ns
    assert hosts.update(transform) is False
    assert path.stat().st_mtime_ns == stamped
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)


def test_in_place_shrinks_the_file(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text(hostsfile.render(KUBELET_HOSTS, {names.dns_name(0): "10.0.0.1"}, MANAGED))
    hostsfile.HostsFile(path, in_place=True).update(
        lambda current: hostsfile.render(current, {}, MANAGED)
    )
    assert path.read_text() == KUBELET_HOSTS


def test_rename_creates_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "etc" / "hosts"
    assert hostsfile.HostsFile(path, in_place=False).update(lambda _: "x\n") is True
    assert path.read_text() == "x\n"


def test_the_production_path_and_mount_points_are_written_in_place(tmp_path: Path) -> None:
    assert hostsfile.choose_in_place(Path("/etc/hosts")) is True
    target = tmp_path / "my hosts"
    target.write_text("")
    mountinfo = tmp_path / "mountinfo"
    escaped = str(target).replace(" ", "\\040")
    mountinfo.write_text(
        "22 1 0:21 / / rw - overlay overlay rw\n"
        f"610 22 253:1 /pods/x/etc-hosts {escaped} rw,relatime - ext4 /dev/vda1 rw\n"
    )
    assert hostsfile.choose_in_place(target, mountinfo=mountinfo) is True
    other = tmp_path / "other"
    assert hostsfile.choose_in_place(other, mountinfo=mountinfo) is False
