"""cd-imex-daemon's settings: flags with their environment twins, and the config they resolve to.

:data:`OPTIONS` are upstream's flags and environment variables (docs/configuration.md) plus our
paths, read by :mod:`computedomain.runtime.flags` with the sub-commands ``run`` and ``check``.
:func:`resolve` checks them and builds one frozen :class:`DaemonConfig`: both commands check
the clique ID, the reload interval and the feature gates; ``run`` also checks what it needs to
start (:meth:`DaemonConfig.validate_run`), and :func:`load_policies` that its policies exist.
Paths default to production and are overridable so the simulation can run many daemons on one
machine. :func:`parse` is pure and raises ConfigError naming the setting; :func:`load`, for
``main``, exits with status 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import attrs

import computedomain
from computedomain.api import featuregates, names, validation
from computedomain.api.errors import ConfigError
from computedomain.daemon.identity import Identity
from computedomain.runtime import flags
from computedomain.runtime.flags import Option, Values, duration, integer

if TYPE_CHECKING:
    from computedomain.policies import registry

PROG: Final = "cd-imex-daemon"
RUN: Final = "run"
CHECK: Final = "check"

# Upstream's message when COMPUTE_DOMAIN_UUID is missing (docs/compatibility.md#daemon-environment).
CDI_MISSING = "CDI container edits did not apply -- is CDI enabled in your container runtime?"

OPTIONS: Final = (
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
    Option(
        "--v",
        names.ENV_LOG_VERBOSITY,
        integer,
        default=0,
        aliases=("-v",),
        help="log verbosity (klog)",
    ),
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
        default=names.DEFAULT_INDEX_POLICY,
        help="index policy, by name, from the computedomain entry-point group (ours)",
    ),
    Option(
        "--dns-name-policy",
        "DNS_NAME_POLICY",
        default=names.DEFAULT_DNS_NAME_POLICY,
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
    """Everything either command needs, resolved once."""

    command: str
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


def resolve(values: Values) -> DaemonConfig:
    """Check the parsed settings and build the config (see the module doc). Raises
    ConfigError naming the setting."""
    validation.clique_id(names.ENV_CLIQUE_ID, values.cliqueid)
    if values.imex_reload_interval < 0:
        raise ConfigError("IMEX_RELOAD_INTERVAL", "must not be negative")
    config = DaemonConfig(
        command=values.command,
        clique_id=values.cliqueid,
        cd_uid=values.compute_domain_uuid,
        cd_name=values.compute_domain_name,
        cd_namespace=values.compute_domain_namespace,
        node_name=values.node_name,
        pod_ip=values.pod_ip,
        pod_uid=values.pod_uid,
        pod_name=values.pod_name,
        pod_namespace=values.pod_namespace,
        max_nodes=values.max_nodes_per_imex_domain,
        features=featuregates.parse(values.feature_gates),
        verbosity=values.v,
        imexd_dir=Path(values.imexd_dir),
        hosts_file=Path(values.hosts_file),
        kubeconfig=values.kubeconfig or None,
        index_policy=values.index_policy,
        dns_name_policy=values.dns_name_policy,
        imex_binary=values.imex_binary,
        imex_ctl_binary=values.imex_ctl_binary,
        reload_interval=float(values.imex_reload_interval),
    )
    if config.command == RUN:
        config.validate_run()
    return config


def load_policies(config: DaemonConfig) -> registry.Policies:
    """The installed policies, with the index and DNS-name policies ``config`` selects built.
    Raises ConfigError naming the setting of an unknown or broken one. The registry (and
    pluggy) is imported here, not at the top: ``check``, the exec probe kubelet runs every few
    seconds for every daemon, reads these settings and needs no policy."""
    from computedomain.policies import registry  # noqa: PLC0415

    policies = registry.load()
    policies.index.get(config.index_policy)
    policies.dns_names.get(config.dns_name_policy)
    return policies


def flag_set() -> flags.FlagSet:
    """The daemon's settings and sub-commands as one
    :class:`~computedomain.runtime.flags.FlagSet`."""
    return flags.FlagSet(
        PROG,
        OPTIONS,
        description="ComputeDomain IMEX daemon: run | check",
        version=computedomain.__version__,
        commands=(RUN, CHECK),
    )


def parse(argv: Sequence[str], env: Mapping[str, str]) -> DaemonConfig:
    """The config from argv (sub-command and flags) and env. Pure; raises ConfigError."""
    return resolve(flag_set().parse(argv, env))


def load(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> DaemonConfig:
    """:func:`parse` for ``main``: a bad setting exits with status 2 and a message."""
    return flag_set().load(resolve, argv, env)
