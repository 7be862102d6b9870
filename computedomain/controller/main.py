"""``cd-controller``: flags in, parts wired, run until a signal or the end of leadership.

Wiring only (style rule 2): parse the settings (:mod:`~.config`), set up logging, connect to the
API server, build the :class:`~.controller.Controller`, its event recorder, metrics and HTTP
endpoint, and run them under one :class:`~computedomain.runtime.supervisor.Supervisor`. With
leader election on, the controller runs only while this replica holds the Lease (identity
``<pod>-<uuid4>``), the Lease is released on exit, and the process exits after losing it, so
each term starts from fresh state. Exit status: 0 after a signal or the end of leadership, 1
on a fatal error, 2 on bad settings (:func:`~.config.load`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from computedomain.controller import config
from computedomain.controller.config import ProgramConfig
from computedomain.runtime import logs, supervisor

if TYPE_CHECKING:
    from computedomain.controller.controller import Controller
    from computedomain.kube.leaderelection import LeaderElector

COMPONENT = "compute-domain-controller"
_log = logs.get_logger(__name__)


def identity(pod_name: str) -> str:
    """A fresh leader-election identity: every process start is a new candidate."""
    return f"{pod_name}-{uuid.uuid4()}"


async def run(config: ProgramConfig) -> int:
    """Wire and run every part until a stop (0); raises FatalError when a critical part fails."""
    # Imported here, after the settings were checked: the Kubernetes client takes a while to
    # import, and a bad setting (or --help) should answer at once.
    from prometheus_client import CollectorRegistry  # noqa: PLC0415

    from computedomain.controller.controller import Controller  # noqa: PLC0415
    from computedomain.controller.metrics import ControllerMetrics  # noqa: PLC0415
    from computedomain.kube.client import ClientConfig, connect  # noqa: PLC0415
    from computedomain.kube.events import EventRecorder  # noqa: PLC0415
    from computedomain.kube.leaderelection import LeaderElector  # noqa: PLC0415
    from computedomain.runtime.httpserver import HttpServer  # noqa: PLC0415

    api = await connect(
        ClientConfig(
            kubeconfig=config.kubeconfig or None,
            qps=config.qps,
            burst=config.burst,
            user_agent=COMPONENT,
            field_manager=COMPONENT,
        )
    )
    registry = CollectorRegistry()
    metrics = ControllerMetrics(registry)
    recorder = EventRecorder(api, component=COMPONENT, host=config.pod_name)
    controller = Controller(api, config.controller, metrics=metrics, recorder=recorder)
    elector = None
    if config.leader_election is not None:
        election = config.leader_election
        elector = LeaderElector(
            api,
            lease_name=election.lease_name,
            namespace=election.namespace,
            identity=identity(config.pod_name),
            lease_duration=election.lease_duration,
            renew_deadline=election.renew_deadline,
            retry_period=election.retry_period,
            release_on_cancel=True,
        )
        metrics.track_leadership(lambda: elector.is_leader)
    try:
        async with supervisor.Supervisor() as sup:
            if config.http_endpoint:
                http = HttpServer(
                    config.http_endpoint, metrics_path=config.metrics_path, registry=registry
                )
                http.add_readiness_check("controller", _readiness(controller, elector))
                sup.start("http", http.serve())
            sup.start("events", recorder.run())
            if elector is not None:
                sup.start("leader-election", elector.run(controller.run))
            else:
                sup.start("controller", controller.run())
            await sup.wait()
    finally:
        await api.close()
    return 0


def _readiness(controller: Controller, elector: LeaderElector | None) -> Callable[[], bool | str]:
    """Ready once the caches synced; a standby replica is ready too (it waits for the Lease)."""

    def check() -> bool | str:
        if elector is not None and not elector.is_leader:
            return True
        return controller.synced or "caches not synced yet"

    return check


def main(argv: Sequence[str] | None = None) -> int:
    """The console script's entry point; returns the exit status."""
    settings = config.load(argv)
    logs.setup(settings.verbosity, COMPONENT)
    _log.info(
        "starting",
        namespace=settings.controller.driver_namespace,
        namespaces=",".join(settings.controller.managed_namespaces),
        gates=settings.controller.daemon.feature_gates,
        leader_election=settings.leader_election is not None,
        workers=settings.controller.workers,
    )
    if settings.pprof_path:
        _log.warning("PPROF_PATH is accepted for compatibility but serves nothing (Go only)")
    return supervisor.run(lambda: run(settings))


if __name__ == "__main__":
    raise SystemExit(main())
