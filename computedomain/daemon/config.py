"""Settings of ``cd-imex-daemon``: upstream's flags and environment variables, plus our paths.

``main`` parses :data:`OPTIONS` (every flag has an environment twin, daemon.md §1) and calls
:func:`load` to get one frozen :class:`DaemonConfig`; ``run`` and ``check`` validate what each
needs (:meth:`DaemonConfig.validate_run`). Paths default to production and are overridable so
the simulation can run many daemons on one machine (spec README §1).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import attrs

from computedomain.api import featuregates, names, validation
from computedomain.api.errors import ConfigError
from computedomain.daemon.identity import Identity
from computedomain.runtime.flags import Option, duration, integer

# The built-in policies' names (computedomain.policies.builtins), spelled out so that the probe
# does not load the plugin machinery; a test keeps them equal.
DEFAULT_INDEX_POLICY = "lowest-free"
DEFAULT_DNS_NAME_POLICY = "upstream"

# Upstream's message when COMPUTE_DOMAIN_UUID is missing (daemon.md §2 step 1).
CDI_MISSING = "CDI container edits did not apply -- is CDI enabled in your container runtime?"

OPTIONS: tuple[Option, ...] = (
    Option(
        "--cliqueid",
        names.ENV_CLIQUE_ID,
        default="",
        help="NVLink clique of this node (<cluster UUID>.<clique>); empty: no fabric, no-op mode",
    ),
    Option(
        "--compute-domain-uuid",
        names.ENV_COMPUTE_DOMAIN_UUID,
        default="",
        help="UID of the ComputeDomain (injected by CDI); run requires it",
    ),
    Option(
        "--compute-domain-name",
        names.ENV_COMPUTE_DOMAIN_NAME,
        default="",
        help="name of the ComputeDomain (status mode writes its status.nodes)",
    ),
    Option(
        "--compute-domain-namespace",
        names.ENV_COMPUTE_DOMAIN_NAMESPACE,
        default="default",
        help="namespace of the ComputeDomain",
    ),
    Option(
        "--node-name",
        names.ENV_NODE_NAME,
        default="",
        help="this node (downward API): the identity of the registration entry",
    ),
    Option(
        "--pod-ip",
        names.ENV_POD_IP,
        default="",
        help="this pod's IP (downward API): the entry's address, nvidia-imex's command address",
    ),
    Option(
        "--pod-uid",
        names.ENV_POD_UID,
        default="",
        help="this pod's UID (downward API): owner of the clique object, writer of the entry",
    ),
    Option(
        "--pod-name",
        names.ENV_POD_NAME,
        default="",
        help="this pod's name (downward API): labelled with the clique, watched for readiness",
    ),
    Option(
        "--pod-namespace",
        names.ENV_POD_NAMESPACE,
        default="",
        help="the driver namespace (downward API), where the clique objects live",
    ),
    Option(
        "--max-nodes-per-imex-domain",
        names.ENV_MAX_NODES_PER_IMEX_DOMAIN,
        type=integer,
        default=0,
        help="size of a clique's index space and of nodes.cfg (the DaemonSet sets 18)",
    ),
    Option(
        "--feature-gates",
        names.ENV_FEATURE_GATES,
        default="",
        help="Name=bool,... (ComputeDomainCliques and IMEXDaemonsWithDNSNames pick the mode)",
    ),
    Option("--v", names.ENV_LOG_VERBOSITY, type=integer, default=0, help="log verbosity (klog)"),
    Option(
        "--imexd-dir",
        "IMEXD_DIR",
        default=names.IMEXD_DIR,
        help="domain directory the plugin mounts: imexd.cfg.tmpl in, imexd.cfg and nodes.cfg "
        "out (ours)",
    ),
    Option(
        "--hosts-file",
        "HOSTS_FILE",
        default=names.HOSTS_FILE,
        help="hosts file mapping daemon names to IPs; written in place when it is /etc/hosts or "
        "a mount point, else replaced atomically (ours)",
    ),
    Option(
        "--kubeconfig",
        "KUBECONFIG",
        default="",
        help="kubeconfig file; empty: the in-cluster configuration (ours)",
    ),
    Option(
        "--index-policy",
        "INDEX_POLICY",
        default=DEFAULT_INDEX_POLICY,
        help="index policy, by name, from the computedomain entry-point group (ours)",
    ),
    Option(
        "--dns-name-policy",
        "DNS_NAME_POLICY",
        default=DEFAULT_DNS_NAME_POLICY,
        help="DNS-name policy, by name, from the computedomain entry-point group (ours)",
    ),
    Option(
        "--imex-binary",
        "IMEX_BINARY",
        default=names.IMEX_BINARY,
        help="the nvidia-imex executable that run supervises, looked up on PATH (ours)",
    ),
    Option(
        "--imex-ctl-binary",
        "IMEX_CTL_BINARY",
        default=names.IMEX_CTL_BINARY,
        help="the nvidia-imex-ctl executable that check asks, looked up on PATH (ours)",
    ),
    Option(
        "--imex-reload-interval",
        "IMEX_RELOAD_INTERVAL",
        type=duration,
        default=5.0,
        help="nvidia-imex handles one SIGUSR1 per interval; a change inside it is signalled "
        "after it (ours)",
    ),
)


@attrs.frozen
class DaemonConfig:
    """Everything ``run`` and ``check`` need, resolved once."""

    clique_id: str
    cd_uid: str
    cd_name: str
    cd_namespace: str
    node_name: str
    pod_ip: str
    pod_uid: str
    pod_name: str
    pod_namespace: str
    max_nodes: int
    features: featuregates.Features
    verbosity: int
    imexd_dir: Path
    hosts_file: Path
    kubeconfig: str | None
    index_policy: str
    dns_name_policy: str
    imex_binary: str
    imex_ctl_binary: str
    reload_interval: float

    @property
    def config_path(self) -> Path:
        return self.imexd_dir / names.IMEXD_CONFIG

    @property
    def nodes_config_path(self) -> Path:
        return self.imexd_dir / names.IMEXD_NODES_CONFIG

    def identity(self) -> Identity:
        return Identity(
            node_name=self.node_name,
            pod_ip=self.pod_ip,
            pod_uid=self.pod_uid,
            pod_name=self.pod_name,
            pod_namespace=self.pod_namespace,
            clique_id=self.clique_id,
            cd_uid=self.cd_uid,
            cd_name=self.cd_name,
            cd_namespace=self.cd_namespace,
        )

    def validate_run(self) -> None:
        """What ``run`` requires beyond parsing. Raises ConfigError naming the setting."""
        if not self.cd_uid:
            raise ConfigError("", CDI_MISSING)
        validation.safe_path_component(names.ENV_COMPUTE_DOMAIN_UUID, self.cd_uid)
        validation.label_value(names.ENV_COMPUTE_DOMAIN_UUID, self.cd_uid)
        for env, value in (
            (names.ENV_POD_NAME, self.pod_name),
            (names.ENV_POD_NAMESPACE, self.pod_namespace),
        ):
            if not value:
                raise ConfigError(env, "must be set (downward API)")
        if not self.clique_id:
            return  # no-op mode needs nothing else
        for env, value in (
            (names.ENV_NODE_NAME, self.node_name),
            (names.ENV_POD_IP, self.pod_ip),
        ):
            if not value:
                raise ConfigError(env, "must be set (downward API)")
        if not self.features.compute_domain_cliques and not self.cd_name:
            raise ConfigError(
                names.ENV_COMPUTE_DOMAIN_NAME, "must be set when ComputeDomainCliques is off"
            )
        if self.max_nodes < 0:
            raise ConfigError(names.ENV_MAX_NODES_PER_IMEX_DOMAIN, "must not be negative")


def load(ns: argparse.Namespace) -> DaemonConfig:
    """Build the config from parsed options. Raises ConfigError (bad clique ID or gates)."""
    clique_id = validation.clique_id(names.ENV_CLIQUE_ID, ns.cliqueid)
    interval = float(ns.imex_reload_interval)
    if interval < 0:
        raise ConfigError("IMEX_RELOAD_INTERVAL", "must not be negative")
    return DaemonConfig(
        clique_id=clique_id,
        cd_uid=ns.compute_domain_uuid,
        cd_name=ns.compute_domain_name,
        cd_namespace=ns.compute_domain_namespace,
        node_name=ns.node_name,
        pod_ip=ns.pod_ip,
        pod_uid=ns.pod_uid,
        pod_name=ns.pod_name,
        pod_namespace=ns.pod_namespace,
        max_nodes=ns.max_nodes_per_imex_domain,
        features=featuregates.parse(ns.feature_gates),
        verbosity=ns.v,
        imexd_dir=Path(ns.imexd_dir),
        hosts_file=Path(ns.hosts_file),
        kubeconfig=ns.kubeconfig or None,
        index_policy=ns.index_policy,
        dns_name_policy=ns.dns_name_policy,
        imex_binary=ns.imex_binary,
        imex_ctl_binary=ns.imex_ctl_binary,
        reload_interval=interval,
    )
