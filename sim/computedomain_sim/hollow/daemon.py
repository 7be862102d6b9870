"""A hollow node's daemon container: the real ``cd-imex-daemon run`` logic in-process, with
``nvidia-imex`` reduced to its readiness protocol.

Called by :mod:`.pods` once a daemon pod's claims are prepared. The container's environment is
built as the simulated kubelet builds it (:func:`computedomain_sim.kubelet.launch.build`: the
pod's env with the downward API, then the CDI edits of its prepared claim), and parsed by the
daemon's own settings (:func:`computedomain.daemon.config.parse`), so identity, mode, node limit
and policies come from the same inputs as in a real pod. The daemon then labels its pod with
the clique (its startup patch) and runs the registration loop, watches and hosts-file sync
(:class:`computedomain_sim.imex.hollow.HollowDaemon`). The stand-in IMEX daemon only answers
readiness: it is READY once the daemon has asked for ``nvidia-imex`` to run with a config (its
entry is registered and its files are written), which is when :attr:`HollowImexDaemon.imex_ready`
is set and the pod turns Ready (the ``check`` probe's answer).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from computedomain.api.errors import ConfigError
from computedomain.daemon import config as daemon_config
from computedomain.daemon import modes, pod
from computedomain.daemon.keeper import ImexInputs
from computedomain.kube.rest import Api
from computedomain_sim.imex.hollow import HollowDaemon
from computedomain_sim.kubelet import launch
from computedomain_sim.kubelet.cdi import ContainerEdits

from . import policies as hollow_policies

__all__ = ["HollowImexDaemon", "daemon_settings", "is_daemon_container"]

PROGRAM = "cd-imex-daemon"


def is_daemon_container(container: Mapping[str, Any]) -> bool:
    """Whether the container runs ``cd-imex-daemon run``. Pure."""
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    return bool(words) and Path(str(words[0])).name == PROGRAM and "run" in words[1:]


def daemon_settings(
    container: Mapping[str, Any], ctx: launch.PodContext, edits: ContainerEdits
) -> daemon_config.DaemonConfig:
    """The daemon's configuration from its container as the kubelet would start it. Raises
    ConfigError (or LaunchError) naming the field."""
    spec = launch.build(
        container,
        ctx,
        launch.Image(commands={}, env={}),
        edits,
        launch.volume_sources(ctx.pod, ctx),
    )
    settings = daemon_config.parse(list(spec.argv[1:]), spec.env)
    if settings.command != daemon_config.RUN:
        raise ConfigError("command", f"expected cd-imex-daemon run, got {settings.command}")
    return settings


class _ReadyDaemon(HollowDaemon):
    """A HollowDaemon that says when the keeper is first asked to run nvidia-imex."""

    imex_wanted: asyncio.Event

    def _want(self, inputs: ImexInputs) -> None:
        super()._want(inputs)
        self.imex_wanted.set()


class HollowImexDaemon:
    """One daemon container. :meth:`start`, then :meth:`stop` (SIGTERM: deregisters)."""

    def __init__(self, api: Api, settings: daemon_config.DaemonConfig, directory: Path) -> None:
        self.settings = settings
        policies = hollow_policies.loaded()
        self.daemon = _ReadyDaemon(
            api,
            settings.identity(),
            directory,
            mode=modes.select(settings.features),
            limit=settings.max_nodes,
            index_policy=policies.index.get(settings.index_policy),
            dns_policy=policies.dns_names.get(settings.dns_name_policy),
        )
        self.daemon.imex_wanted = asyncio.Event()

    @property
    def imex_ready(self) -> asyncio.Event:
        """Set once the stand-in nvidia-imex would answer READY."""
        return self.daemon.imex_wanted

    async def start(self) -> None:
        """The startup patch (clique label on the own pod), then the parts. Raises ApiError."""
        await pod.label_with_clique(self.daemon.api, self.daemon.identity)
        await self.daemon.start()

    async def stop(self) -> None:
        """Graceful shutdown: stop the parts, remove the own entry (never raises)."""
        await self.daemon._stop_tasks()
        await self.daemon.parts.loop.deregister()
