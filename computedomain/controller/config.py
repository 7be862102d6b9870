"""cd-controller's settings: flags with their environment twins, and the config they resolve to.

Upstream's names and defaults (docs/configuration.md) come first in :data:`OPTIONS`; ours follow,
each documented in its help text. Every flag has an environment twin
(:mod:`computedomain.runtime.flags`), and the configuration reference is generated from
:data:`OPTIONS`. :func:`resolve` checks the parsed values and builds one frozen
:class:`ProgramConfig`; everything below ``main`` receives its :class:`ControllerConfig` and
never reads the environment. The values are checked by the pure parsers of
:mod:`~computedomain.controller.settingvalues`, which raise
:class:`~computedomain.api.errors.ConfigError` naming the setting, so a bad value stops the
program at start (status 2) with a message a user can act on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import attrs

import computedomain
from computedomain.api import featuregates, imex, names, validation
from computedomain.api.errors import ConfigError
from computedomain.controller import settingvalues
from computedomain.runtime import flags
from computedomain.runtime.flags import Option, Values

DEFAULT_DAEMON_COMMAND: Final = "cd-imex-daemon"
DEFAULT_STATUS_COALESCE_WINDOW: Final = 0.25
DEFAULT_STATUS_COALESCE_MAX_WINDOW: Final = 2.0  # upstream polls status every 2 s
DEFAULT_CLEANUP_INTERVAL: Final = 600.0  # upstream's orphan-cleanup period (10 min)
DEFAULT_RESYNC_PERIOD: Final = 600.0  # upstream's informer resync (10 min)


@attrs.frozen
class DaemonSettings:
    """Everything the renderers need beyond the ComputeDomain itself (fixed at DS creation)."""

    namespace: str
    image: str
    log_verbosity: int
    max_nodes_per_imex_domain: int = names.DEFAULT_MAX_NODES_PER_IMEX_DOMAIN
    feature_gates: str = attrs.field(factory=lambda: featuregates.parse("").render())
    image_pull_secrets: tuple[str, ...] = ()
    priority_class_name: str = ""
    # {"requests": {"cpu": "100m"}, "limits": {...}}; empty: no requests or limits (upstream).
    resources: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    command: str = DEFAULT_DAEMON_COMMAND
    # The daemons' policies by name (empty: not rendered, the daemon's default applies) and the
    # policies' own settings, as (name, value) environment pairs in the operator's order.
    index_policy: str = ""
    dns_name_policy: str = ""
    policy_env: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class ControllerConfig:
    """What a :class:`~computedomain.controller.controller.Controller` needs to run."""

    daemon: DaemonSettings
    features: featuregates.Features = attrs.field(factory=lambda: featuregates.parse(""))
    # Host-managed: no daemons, cliques or node labels
    # (docs/compatibility.md#host-managed-imex-daemons).
    imex: imex.Settings = attrs.field(factory=imex.Settings)
    additional_namespaces: tuple[str, ...] = ()
    workers: int = 1
    status_coalesce_window: float = DEFAULT_STATUS_COALESCE_WINDOW
    status_coalesce_max_window: float = DEFAULT_STATUS_COALESCE_MAX_WINDOW
    cleanup_interval: float = DEFAULT_CLEANUP_INTERVAL
    resync_period: float = DEFAULT_RESYNC_PERIOD

    @property
    def driver_namespace(self) -> str:
        return self.daemon.namespace

    @property
    def managed_namespaces(self) -> tuple[str, ...]:
        """The driver namespace first, then each additional one once."""
        return settingvalues.unique((self.daemon.namespace, *self.additional_namespaces))


PROG: Final = "cd-controller"

OPTIONS: Final = (
    # -- upstream's ------------------------------------------------------------------------
    Option("--pod-name", "POD_NAME", required=True, help="this pod's name (leader identity)"),
    Option("--namespace", "NAMESPACE", default="default", help="the driver namespace"),
    Option("--image-name", "IMAGE_NAME", required=True, help="image of the daemon DaemonSet"),
    Option(
        "--cd-daemon-image-pull-secret-names",
        "CD_DAEMON_IMAGE_PULL_SECRET_NAMES",
        default="",
        help="image pull secrets of daemon pods (comma or space separated)",
    ),
    Option(
        "--log-verbosity-cd-daemon",
        "LOG_VERBOSITY_CD_DAEMON",
        flags.integer,
        required=True,
        help="log verbosity of the daemons (their LOG_VERBOSITY)",
    ),
    Option(
        "--max-nodes-per-imex-domain",
        "MAX_NODES_PER_IMEX_DOMAIN",
        flags.integer,
        default=18,
        help="nodes per IMEX domain, passed to the daemons",
    ),
    Option("--http-endpoint", "HTTP_ENDPOINT", default="", help="listen address (:8080); off"),
    Option("--metrics-path", "METRICS_PATH", default="/metrics", help="empty: no metrics"),
    Option("--pprof-path", "PPROF_PATH", default="", help="accepted for compatibility; unused"),
    Option(
        "--additional-namespaces",
        "ADDITIONAL_NAMESPACES",
        default="",
        help="more namespaces whose daemon DaemonSets are managed (earlier installs)",
    ),
    Option("--kubeconfig", "KUBECONFIG", default="", help="empty: in-cluster configuration"),
    Option("--kube-api-qps", "KUBE_API_QPS", flags.number, default=5.0, help="client QPS"),
    Option("--kube-api-burst", "KUBE_API_BURST", flags.integer, default=10, help="client burst"),
    Option("--leader-election-enabled", "LEADER_ELECTION_ENABLED", flags.boolean, default=False),
    Option(
        "--leader-election-lease-lock-namespace",
        "LEADER_ELECTION_LEASE_LOCK_NAMESPACE",
        default="default",
    ),
    Option(
        "--leader-election-lease-lock-name",
        "LEADER_ELECTION_LEASE_LOCK_NAME",
        default="nvidia-compute-domain-controller",
    ),
    Option(
        "--leader-election-lease-duration",
        "LEADER_ELECTION_LEASE_DURATION",
        flags.duration,
        default=15.0,
    ),
    Option(
        "--leader-election-renew-deadline",
        "LEADER_ELECTION_RENEW_DEADLINE",
        flags.duration,
        default=10.0,
    ),
    Option(
        "--leader-election-retry-period",
        "LEADER_ELECTION_RETRY_PERIOD",
        flags.duration,
        default=2.0,
    ),
    Option("--feature-gates", "FEATURE_GATES", default="", help="Name=bool,... (upstream's)"),
    Option(
        "--imex-mode",
        imex.ENV_MODE,
        default=str(imex.DEFAULT_MODE),
        help="driverManaged (a daemon DaemonSet per domain) or hostManaged (the host runs "
        "nvidia-imex; needs the HostManagedIMEXDaemon gate)",
    ),
    Option(
        "--imex-isolation",
        imex.ENV_ISOLATION,
        default=str(imex.DEFAULT_ISOLATION),
        help="domain (empty: domain); channel is reserved and refused",
    ),
    Option("--v", "V", flags.integer, default=0, aliases=("-v",), help="log verbosity"),
    # -- ours --------------------------------------------------------------------------------
    Option(
        "--workers",
        "WORKERS",
        flags.integer,
        default=4,
        help="domains reconciled at once (ours; upstream runs one worker)",
    ),
    Option(
        "--status-coalesce-window",
        "STATUS_COALESCE_WINDOW",
        flags.duration,
        default=0.25,
        help="at most one status write per domain per window (ours)",
    ),
    Option(
        "--status-coalesce-max-window",
        "STATUS_COALESCE_MAX_WINDOW",
        flags.duration,
        default=2.0,
        help="widest window while a domain's status keeps changing (ours; upstream polls every 2s)",
    ),
    Option(
        "--cd-daemon-priority-class-name",
        "CD_DAEMON_PRIORITY_CLASS_NAME",
        default="",
        help="priorityClassName of daemon pods (ours; upstream sets none)",
    ),
    Option(
        "--cd-daemon-resources",
        "CD_DAEMON_RESOURCES",
        default="",
        help='daemon container resources: "cpu=100m,memory=64Mi" (requests) or JSON '
        '{"requests": {...}, "limits": {...}} (ours; upstream sets none)',
    ),
    Option(
        "--daemon-command",
        "DAEMON_COMMAND",
        default=DEFAULT_DAEMON_COMMAND,
        help="the daemon binary in the image, for its run and check commands (ours)",
    ),
    Option(
        "--index-policy",
        settingvalues.ENV_INDEX_POLICY,
        default="",
        help="the daemons' index policy, by name (their INDEX_POLICY; e.g. stable-hash from a "
        "plugin); empty: not set, the daemon's lowest-free (ours)",
    ),
    Option(
        "--dns-name-policy",
        settingvalues.ENV_DNS_NAME_POLICY,
        default="",
        help="the daemons' DNS-name policy, by name (their DNS_NAME_POLICY; e.g. suffix from a "
        "plugin); empty: not set, the daemon's upstream (ours)",
    ),
    Option(
        "--cd-daemon-policy-env",
        "CD_DAEMON_POLICY_ENV",
        default="",
        help="settings of the daemons' policies, added to their environment: NAME=value,... or "
        "a JSON object (e.g. CD_DNS_SUFFIX=imex.example.com for suffix) (ours)",
    ),
    Option(
        "--cleanup-interval",
        "CLEANUP_INTERVAL",
        flags.duration,
        default=DEFAULT_CLEANUP_INTERVAL,
        help="orphan cleanup period (upstream: 10m)",
    ),
)


@attrs.frozen
class LeaderElection:
    lease_name: str
    namespace: str
    lease_duration: float
    renew_deadline: float
    retry_period: float


@attrs.frozen
class ProgramConfig:
    """Everything ``main`` wires: the controller's config plus process-level settings."""

    controller: ControllerConfig
    pod_name: str
    kubeconfig: str
    qps: float
    burst: int
    http_endpoint: str
    metrics_path: str
    verbosity: int
    leader_election: LeaderElection | None
    pprof_path: str = ""


def resolve(values: Values) -> ProgramConfig:
    """Check every setting and build the config. Pure; raises ConfigError naming the setting."""
    gates = featuregates.parse(values.feature_gates)
    imex_settings = imex.resolve(values.imex_mode, values.imex_isolation, gates)
    features = imex.controller_features(imex_settings, gates)
    namespace = validation.dns1123_label("NAMESPACE", values.namespace)
    if not values.image_name.strip():
        raise ConfigError("IMAGE_NAME", "must not be empty")
    if not 0 <= values.log_verbosity_cd_daemon <= 10:
        raise ConfigError("LOG_VERBOSITY_CD_DAEMON", "must be between 0 and 10")
    if not 0 <= values.v <= 10:
        raise ConfigError("-v", "must be between 0 and 10")
    settingvalues.check_positive("MAX_NODES_PER_IMEX_DOMAIN", values.max_nodes_per_imex_domain)
    settingvalues.check_positive("KUBE_API_QPS", values.kube_api_qps)
    settingvalues.check_positive("KUBE_API_BURST", values.kube_api_burst)
    settingvalues.check_positive("WORKERS", values.workers)
    settingvalues.check_non_negative("STATUS_COALESCE_WINDOW", values.status_coalesce_window)
    if values.status_coalesce_max_window < values.status_coalesce_window:
        raise ConfigError(
            "STATUS_COALESCE_MAX_WINDOW",
            f"must not be below STATUS_COALESCE_WINDOW ({values.status_coalesce_window}s),"
            f" got {values.status_coalesce_max_window}s",
        )
    settingvalues.check_positive("CLEANUP_INTERVAL", values.cleanup_interval)
    priority = values.cd_daemon_priority_class_name.strip()
    if priority:
        validation.dns1123_subdomain("CD_DAEMON_PRIORITY_CLASS_NAME", priority)
    if not values.daemon_command.strip():
        raise ConfigError("DAEMON_COMMAND", "must not be empty")
    daemon = DaemonSettings(
        namespace=namespace,
        image=values.image_name.strip(),
        log_verbosity=values.log_verbosity_cd_daemon,
        max_nodes_per_imex_domain=values.max_nodes_per_imex_domain,
        feature_gates=features.render(),
        image_pull_secrets=settingvalues.parse_pull_secrets(
            values.cd_daemon_image_pull_secret_names
        ),
        priority_class_name=priority,
        resources=settingvalues.parse_resources(values.cd_daemon_resources),
        command=values.daemon_command.strip(),
        index_policy=settingvalues.parse_policy_name(
            settingvalues.ENV_INDEX_POLICY, values.index_policy
        ),
        dns_name_policy=settingvalues.parse_policy_name(
            settingvalues.ENV_DNS_NAME_POLICY, values.dns_name_policy
        ),
        policy_env=settingvalues.parse_policy_env(values.cd_daemon_policy_env),
    )
    controller = ControllerConfig(
        daemon=daemon,
        features=features,
        imex=imex_settings,
        additional_namespaces=settingvalues.parse_namespaces(values.additional_namespaces),
        workers=values.workers,
        status_coalesce_window=values.status_coalesce_window,
        status_coalesce_max_window=values.status_coalesce_max_window,
        cleanup_interval=values.cleanup_interval,
    )
    election = None
    if values.leader_election_enabled:
        election = LeaderElection(
            lease_name=validation.dns1123_subdomain(
                "LEADER_ELECTION_LEASE_LOCK_NAME", values.leader_election_lease_lock_name
            ),
            namespace=validation.dns1123_label(
                "LEADER_ELECTION_LEASE_LOCK_NAMESPACE",
                values.leader_election_lease_lock_namespace,
            ),
            lease_duration=values.leader_election_lease_duration,
            renew_deadline=values.leader_election_renew_deadline,
            retry_period=values.leader_election_retry_period,
        )
        _check_timings(election)
    return ProgramConfig(
        controller=controller,
        pod_name=values.pod_name,
        kubeconfig=values.kubeconfig,
        qps=values.kube_api_qps,
        burst=values.kube_api_burst,
        http_endpoint=values.http_endpoint,
        metrics_path=values.metrics_path,
        verbosity=values.v,
        leader_election=election,
        pprof_path=values.pprof_path,
    )


def _check_timings(election: LeaderElection) -> None:
    """client-go's rules: duration > deadline > 1.2 x retry period, all positive."""
    for field, value in (
        ("LEADER_ELECTION_LEASE_DURATION", election.lease_duration),
        ("LEADER_ELECTION_RENEW_DEADLINE", election.renew_deadline),
        ("LEADER_ELECTION_RETRY_PERIOD", election.retry_period),
    ):
        settingvalues.check_positive(field, value)
    if election.lease_duration <= election.renew_deadline:
        raise ConfigError(
            "LEADER_ELECTION_LEASE_DURATION", "must be longer than LEADER_ELECTION_RENEW_DEADLINE"
        )
    if election.renew_deadline <= 1.2 * election.retry_period:
        raise ConfigError(
            "LEADER_ELECTION_RENEW_DEADLINE",
            "must be longer than 1.2 x LEADER_ELECTION_RETRY_PERIOD",
        )


def flag_set() -> flags.FlagSet:
    """The controller's settings as one :class:`~computedomain.runtime.flags.FlagSet`."""
    return flags.FlagSet(
        PROG,
        OPTIONS,
        description="The ComputeDomain controller.",
        version=computedomain.__version__,
    )


def parse(argv: Sequence[str], env: Mapping[str, str]) -> ProgramConfig:
    """Parse argv and env into a ProgramConfig. Pure; raises ConfigError naming the setting."""
    return resolve(flag_set().parse(argv, env))


def load(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> ProgramConfig:
    """:func:`parse` for ``main``: a bad setting exits with status 2 and a message."""
    return flag_set().load(resolve, argv, env)
