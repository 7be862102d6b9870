"""The demo's summary: DNS names from the daemons' hosts files, the channel devices from the
workers' logs, and the rendered text naming every member and worker."""

from __future__ import annotations

from computedomain.api import names
from computedomain_sim.cli.demo import summary
from computedomain_sim.cli.demo.workload import CHANNELS_MARKER


def test_hosts_names_keep_the_daemon_names_only() -> None:
    text = (
        "127.0.0.1 localhost\n"
        f"10.0.0.1 {names.dns_name(0)}  # own\n"
        f"10.0.0.2 other {names.dns_name(1)}\n"
    )
    assert summary.hosts_names(text) == {
        "10.0.0.1": names.dns_name(0),
        "10.0.0.2": names.dns_name(1),
    }


def test_the_last_report_of_a_worker_counts() -> None:
    log = f"noise\n{CHANNELS_MARKER} none\nmore\n{CHANNELS_MARKER} /dev/x/channel0\n"
    assert summary.channels_seen(log) == "/dev/x/channel0"
    assert summary.channels_seen("nothing") == ""


def test_render_names_every_member_and_worker() -> None:
    done = summary.Summary(
        domain="demo/demo",
        seconds_to_ready=12.34,
        members=(
            summary.Member("c.0", "r0n0", 0, "10.0.0.1", "Ready", "n0", summary.FROM_HOSTS),
            summary.Member("c.1", "r1n0", 0, "10.0.1.1", "Ready", "n1", summary.FROM_POLICY),
        ),
        workers=(
            summary.Worker("w-1", "r0n0", "/dev/x/channel0"),
            summary.Worker("w-2", "r1n0", ""),
        ),
    )
    text = "\n".join(summary.render(done))
    assert "ComputeDomain demo/demo Ready 12.3s after it was created" in text
    assert "clique c.0:" in text
    assert "clique c.1:" in text
    assert "0      n0        10.0.0.1  r0n0  Ready" in text
    assert "DNS names from the built-in DNS-name policy and the daemon hosts file" in text
    assert "r0n0  w-1  /dev/x/channel0" in text
    assert "r1n0  w-2  (nothing printed)" in text
