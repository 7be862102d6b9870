"""The three ways the daemon can run, chosen once from the feature gates.

The contract: docs/compatibility.md#flags-environment-and-feature-gates.

=========================  ========================  ==============================
gates                      membership list           what nvidia-imex reads
=========================  ========================  ==============================
cliques + DNS names        ComputeDomainClique       static names + hosts file
DNS names only             CD ``status.nodes``       static names + hosts file
neither (legacy IP mode)   CD ``status.nodes``       nodes file of IPs, restarts
cliques without DNS names  rejected at startup (``feature gate validation failed``)
=========================  ========================  ==============================

A :class:`Mode` is a strategy object: the wiring (:mod:`computedomain.daemon.runner`) asks it
for the shape, the one-time file preparation and the sync strategy, and never branches on the
gates itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs

from computedomain.api import featuregates
from computedomain.api.errors import ConfigError
from computedomain.daemon import dnsnames, files, hostsfile
from computedomain.daemon.identity import Identity
from computedomain.daemon.imexsync import DnsSync, IpSync, Sync
from computedomain.daemon.keeper import ImexInputs
from computedomain.daemon.shapes import CliqueShape, Shape, StatusShape
from computedomain.policies.hookspecs import DnsNamePolicy

Want = Callable[[ImexInputs], None]


@attrs.frozen
class Paths:
    nodes_config: Path
    hosts_file: Path


@attrs.frozen
class Mode:
    """One row of the table above."""

    name: str
    make_shape: Callable[[Identity, int], Shape]
    dns_names: bool

    def shape(self, identity: Identity, limit: int) -> Shape:
        return self.make_shape(identity, limit)

    def prepare(self, paths: Paths, policy: DnsNamePolicy, limit: int) -> None:
        """Files written once at start: DNS mode's static ``nodes.cfg``.
        Blocking; raises OSError, DuplicateName."""
        if self.dns_names:
            text = dnsnames.render_nodes_config(dnsnames.all_names(policy, limit))
            files.write_if_changed(paths.nodes_config, text)

    def sync(
        self, identity: Identity, paths: Paths, want: Want, policy: DnsNamePolicy, limit: int
    ) -> Sync:
        """The strategy that turns membership lists into files and keeper inputs."""
        if not self.dns_names:
            return IpSync(paths.nodes_config, want, clique_id=identity.clique_id)
        in_place = hostsfile.choose_in_place(paths.hosts_file)
        return DnsSync(
            hostsfile.HostsFile(paths.hosts_file, in_place=in_place),
            want,
            clique_id=identity.clique_id,
            node_name=identity.node_name,
            pod_ip=identity.pod_ip,
            policy=policy,
            limit=limit,
        )


CLIQUES = Mode("cliques", CliqueShape, dns_names=True)
STATUS_DNS = Mode("status+dns-names", StatusShape, dns_names=True)
STATUS_IPS = Mode("status+ips", StatusShape, dns_names=False)


def select(features: featuregates.Features) -> Mode:
    """The mode the gates ask for. Raises ConfigError for cliques without DNS names."""
    if features.compute_domain_cliques and features.imex_daemons_with_dns_names:
        return CLIQUES
    if features.imex_daemons_with_dns_names:
        return STATUS_DNS
    if not features.compute_domain_cliques:
        return STATUS_IPS
    raise ConfigError(
        "FEATURE_GATES",
        f"feature gate validation failed: {featuregates.COMPUTE_DOMAIN_CLIQUES} requires "
        f"{featuregates.IMEX_DAEMONS_WITH_DNS_NAMES}",
    )
