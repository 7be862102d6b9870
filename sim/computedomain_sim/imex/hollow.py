"""Hollow daemons: many ``cd-imex-daemon`` instances in one process, with real API traffic.

Each :class:`HollowDaemon` runs the real registration loop, watches and hosts-file sync of one
daemon (:func:`computedomain.daemon.assembly.assemble`), each with its own API client, against
one API server over HTTP; only the process boundary is missing. The keeper is optional: pass a
``spawn`` to supervise a real child per daemon, or leave it out to just record what the keeper
would have been told. Used by the property suites and ``bench/daemon_join.py``, and by the
simulation's scale mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from pathlib import Path
from typing import Any

from computedomain.daemon import modes
from computedomain.daemon.assembly import Parts, assemble
from computedomain.daemon.identity import Identity
from computedomain.daemon.keeper import ImexInputs, ImexKeeper, KeeperTiming, Spawn
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.rest import Api
from computedomain.policies.hookspecs import DnsNamePolicy, IndexPolicy


class HollowDaemon:
    """One in-process daemon. :meth:`start`, then :meth:`leave` (graceful) or :meth:`crash`."""

    def __init__(
        self,
        api: Api,
        identity: Identity,
        directory: Path,
        *,
        mode: modes.Mode,
        limit: int,
        index_policy: IndexPolicy,
        dns_policy: DnsNamePolicy,
        spawn: Spawn | None = None,
        timing: KeeperTiming | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.api = api
        self.identity = identity
        self.directory = directory
        self.mode = mode
        self.limit = limit
        self.dns_policy = dns_policy
        self.paths = modes.Paths(
            nodes_config=directory / "nodes.cfg", hosts_file=directory / "hosts"
        )
        self.keeper = ImexKeeper(spawn, timing=timing) if spawn is not None else None
        self.wanted: list[ImexInputs] = []
        self.parts: Parts = assemble(
            api,
            identity,
            mode=mode,
            limit=limit,
            index_policy=index_policy,
            dns_policy=dns_policy,
            paths=self.paths,
            want=self._want,
            blocked=lambda: self.keeper is not None and self.keeper.blocked_by is not None,
            rng=rng,
            resync_period=None,
        )
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    async def connect(
        cls, url: str, token: str, identity: Identity, directory: Path, **kw: Any
    ) -> HollowDaemon:
        """A daemon with its own API client (its own connection pool), as a real one has."""
        api = await connect(ClientConfig(url=url, token=token, user_agent="hollow-daemon"))
        return cls(api, identity, directory, **kw)

    def _want(self, inputs: ImexInputs) -> None:
        self.wanted.append(inputs)
        if self.keeper is not None:
            self.keeper.want(inputs)

    async def start(self) -> None:
        """Write the static files and start the parts. Idempotent only before a stop."""
        self.directory.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(self.mode.prepare, self.paths, self.dns_policy, self.limit)
        if self.keeper is not None:
            self._tasks.append(asyncio.create_task(self.keeper.run(), name="keeper"))
        for name, coro in self.parts.tasks().items():
            self._tasks.append(asyncio.create_task(coro, name=name))

    async def _stop_tasks(self) -> None:
        # Newest first: registration stops writing before the child is stopped.
        while self._tasks:
            task = self._tasks.pop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def leave(self) -> bool:
        """Graceful shutdown: stop, then remove the own entry. Whether the entry is gone."""
        await self._stop_tasks()
        try:
            return await self.parts.loop.deregister()
        finally:
            await self.api.close()

    async def crash(self) -> None:
        """Stop without deregistering (SIGKILL, node loss, container crash)."""
        await self._stop_tasks()
        await self.api.close()
