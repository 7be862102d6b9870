"""The flags of ``cd-imex-daemon`` with their environment twins, and the checks both commands make.

``main`` parses :data:`OPTIONS` (every flag has an environment twin, daemon.md §1) and passes
the result through :func:`validate` for either command. ``run`` then builds its
:class:`~computedomain.daemon.config.DaemonConfig` (:func:`~computedomain.daemon.config.load`);
``check``, the pods' exec probe (a fresh process every second per daemon while a domain forms),
takes its three values straight from the parsed flags, so that it never loads the attrs
classes of :mod:`~computedomain.daemon.config`. Pure data and pure functions.
"""

from __future__ import annotations

import os

from computedomain.api import featuregates, names, validation
from computedomain.api.errors import ConfigError
from computedomain.runtime.flags import Option, Values, duration, integer

# The built-in policies' names (computedomain.policies.builtins), spelled out so that the probe
# does not load the plugin machinery; a test keeps them equal.
DEFAULT_INDEX_POLICY = "lowest-free"
DEFAULT_DNS_NAME_POLICY = "upstream"

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


def validate(ns: Values) -> featuregates.Features:
    """The checks both commands make beyond parsing, in this order: the clique ID, the reload
    interval, the feature gates (returned resolved). Pure; raises ConfigError naming the
    setting."""
    validation.clique_id(names.ENV_CLIQUE_ID, ns.cliqueid)
    if ns.imex_reload_interval < 0:
        raise ConfigError("IMEX_RELOAD_INTERVAL", "must not be negative")
    return featuregates.parse(ns.feature_gates)


def config_path(imexd_dir: str | os.PathLike[str]) -> str:
    """The IMEX config that ``run`` renders and ``check`` has ``nvidia-imex-ctl`` read (a
    string: the probe, a process every second per forming daemon, does without pathlib)."""
    return os.path.join(imexd_dir, names.IMEXD_CONFIG)
