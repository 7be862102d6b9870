"""Settings of ``cd-imex-daemon run``: one frozen :class:`DaemonConfig`, resolved once.

:func:`load` builds it from the flags that :mod:`~computedomain.daemon.main` parsed with
:data:`~computedomain.daemon.options.OPTIONS` (upstream's flags and environment variables, plus
our paths) after :func:`~computedomain.daemon.options.validate`; :meth:`DaemonConfig.validate_run`
checks what ``run`` needs beyond that. Paths default to production and are overridable so the
simulation can run many daemons on one machine (spec README §1). ``check``, the per-second
probe, does not load this module: building its attrs classes (this one and
:class:`~computedomain.daemon.identity.Identity`) took 1.5 ms of the probe's CPU.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from computedomain.api import featuregates, names, validation
from computedomain.api.errors import ConfigError
from computedomain.daemon import options
from computedomain.daemon.identity import Identity
from computedomain.runtime.flags import Values

# Upstream's message when COMPUTE_DOMAIN_UUID is missing (daemon.md §2 step 1).
CDI_MISSING = "CDI container edits did not apply -- is CDI enabled in your container runtime?"


@attrs.frozen
class DaemonConfig:
    """Everything ``run`` needs, resolved once."""

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
        return Path(options.config_path(self.imexd_dir))

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


def load(ns: Values) -> DaemonConfig:
    """Build the config from parsed options. Raises ConfigError (bad clique ID, interval or
    gates: :func:`~computedomain.daemon.options.validate`)."""
    features = options.validate(ns)
    return DaemonConfig(
        clique_id=ns.cliqueid,
        cd_uid=ns.compute_domain_uuid,
        cd_name=ns.compute_domain_name,
        cd_namespace=ns.compute_domain_namespace,
        node_name=ns.node_name,
        pod_ip=ns.pod_ip,
        pod_uid=ns.pod_uid,
        pod_name=ns.pod_name,
        pod_namespace=ns.pod_namespace,
        max_nodes=ns.max_nodes_per_imex_domain,
        features=features,
        verbosity=ns.v,
        imexd_dir=Path(ns.imexd_dir),
        hosts_file=Path(ns.hosts_file),
        kubeconfig=ns.kubeconfig or None,
        index_policy=ns.index_policy,
        dns_name_policy=ns.dns_name_policy,
        imex_binary=ns.imex_binary,
        imex_ctl_binary=ns.imex_ctl_binary,
        reload_interval=float(ns.imex_reload_interval),
    )
