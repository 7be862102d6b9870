"""Background cleanups, at start and then periodically.

- **Stale half-prepared claims**: a ``PrepareStarted`` entry whose ResourceClaim no longer
  exists, or exists with another UID (re-created), is unprepared through the normal path (label
  released, CDI spec deleted, the entry marked ``PrepareAborted``). Lookup errors leave the
  entry for the next run; an existing claim with the same UID is left alone (its prepare may
  still be waiting).
- **Expired aborted entries**: ``PrepareAborted`` entries older than their TTL are dropped, as
  upstream's cleanup does (docs/compatibility.md#aborted-prepares-in-the-checkpoint); every
  checkpoint write drops them too.
- **Orphaned CDI specs**: a claim spec file for a claim the checkpoint does not know, or knows
  only as aborted (upstream
  left these; a crash between writing the spec and the checkpoint can leave one) is deleted.
- **Domain directories** of ComputeDomains that no longer exist (the informer, synced, does not
  have them) are removed; unprepare leaves them on purpose (docs/compatibility.md#daemon-claims). A
  directory whose domain still has a prepared daemon claim here is kept (its daemon may still run).

Besides the period, :meth:`Cleanup.kick` asks for a run now: the plugin kicks it when a domain
or a daemon pod leaves its informers, so a deleted domain's directory goes within moments, not
at the next period (upstream leaves it up to 10 minutes).

Each step that touches the checkpoint, the CDI root or the domain directories holds the node
lock, like any prepare attempt. Errors are logged, never raised: the next run retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from computedomain.kubeletplugin.cdistore import CdiStore
from computedomain.kubeletplugin.checkpoint import Checkpoint, ClaimState, DeviceType
from computedomain.kubeletplugin.checkpointstore import CheckpointStore
from computedomain.kubeletplugin.nodelock import NodeLock
from computedomain.kubeletplugin.ports import ClusterView
from computedomain.kubeletplugin.state import DeviceState
from computedomain.runtime import logs
from computedomain.runtime.cancellation import raise_if_cancelling

log = logs.get_logger(__name__)

# (namespace, name) -> the claim, or None when it does not exist; raises on other errors.
ClaimLookup = Callable[[str, str], Awaitable[Mapping[str, Any] | None]]


def stale_candidates(checkpoint: Checkpoint) -> list[tuple[str, str, str]]:
    """(uid, namespace, name) of every PrepareStarted entry that names its claim. Pure."""
    return [
        (uid, entry.namespace, entry.name)
        for uid, entry in checkpoint.claims.items()
        if entry.state is ClaimState.PREPARE_STARTED and entry.name
    ]


def daemon_domains(checkpoint: Checkpoint) -> set[str]:
    """Domain IDs that a claim in the checkpoint holds a daemon device of. Pure."""
    return {
        device.domain_id
        for entry in checkpoint.claims.values()
        for device in entry.devices
        if device.type is DeviceType.DAEMON
    }


def orphaned_specs(checkpoint: Checkpoint, spec_uids: set[str]) -> list[str]:
    """Claim UIDs with a CDI spec but no live checkpoint entry (none, or aborted). Pure."""
    return sorted(spec_uids - {uid for uid, _ in checkpoint.live()})


@attrs.define
class Cleanup:
    state: DeviceState
    lock: NodeLock
    checkpoints: CheckpointStore
    cdi: CdiStore
    cluster: ClusterView
    domains_root: Path
    lookup: ClaimLookup
    _kicked: asyncio.Event = attrs.field(factory=asyncio.Event, init=False)

    def kick(self) -> None:
        """Ask for a run as soon as the current one (if any) ends. Event-loop thread only."""
        self._kicked.set()

    async def stale_claims(self) -> list[str]:
        """Unprepare stale PrepareStarted claims; returns their UIDs."""
        checkpoint = await asyncio.to_thread(self.checkpoints.read)
        removed = []
        for uid, namespace, name in stale_candidates(checkpoint):
            try:
                claim = await self.lookup(namespace, name)
            except Exception as exc:  # retried next run
                log.warning(
                    "cleanup: cannot look up claim", claim=f"{namespace}/{name}", error=str(exc)
                )
                continue
            if claim is not None and (claim.get("metadata") or {}).get("uid") == uid:
                continue
            try:
                async with self.lock.held():
                    await self.state.forget(uid)
            except Exception as exc:
                log.warning("cleanup: unpreparing a stale claim failed", uid=uid, error=str(exc))
                continue
            log.info("cleanup: unprepared a stale claim", claim=f"{namespace}/{name}", uid=uid)
            removed.append(uid)
        return removed

    async def expired_aborted(self) -> int:
        """Drop aborted entries past their TTL; returns how many."""
        async with self.lock.held():
            count = await self.state.expire_aborted()
        if count:
            log.info("cleanup: deleted expired PrepareAborted claim entries", count=count)
        return count

    async def orphaned_specs(self) -> list[str]:
        """Delete CDI specs of claims the checkpoint does not know; returns their UIDs."""
        async with self.lock.held():
            checkpoint = await asyncio.to_thread(self.checkpoints.read)
            uids = orphaned_specs(checkpoint, await asyncio.to_thread(self.cdi.claim_uids))
            removed = []
            for uid in uids:  # one that cannot be removed does not stop the others
                try:
                    await asyncio.to_thread(self.cdi.remove_claim, uid)
                except OSError as exc:
                    log.warning(
                        "cleanup: cannot remove an orphaned CDI spec", uid=uid, error=str(exc)
                    )
                    continue
                log.info("cleanup: removed an orphaned CDI spec", uid=uid)
                removed.append(uid)
        return removed

    async def domain_dirs(self) -> list[str]:
        """Remove directories of domains that no longer exist; returns their names."""
        removed = []
        async with self.lock.held():
            try:
                entries = await asyncio.to_thread(lambda: list(self.domains_root.iterdir()))
            except FileNotFoundError:
                return []
            held = daemon_domains(await asyncio.to_thread(self.checkpoints.read))
            for entry in entries:
                if not entry.is_dir() or entry.name in held:
                    continue
                if self.cluster.domain(entry.name) is not None:
                    continue
                await asyncio.to_thread(shutil.rmtree, entry, True)
                log.info("cleanup: removed a deleted domain's directory", domain=entry.name)
                removed.append(entry.name)
        return removed

    async def run_once(self) -> None:
        steps: tuple[Callable[[], Awaitable[object]], ...] = (
            self.stale_claims,
            self.expired_aborted,
            self.orphaned_specs,
            self.domain_dirs,
        )
        for step in steps:
            try:
                await step()
            except Exception:
                raise_if_cancelling()  # an error that replaced a cancellation ends the run
                log.exception("cleanup step failed", step=step.__name__)

    async def run(self, interval: float) -> None:
        """Run now, then every ``interval`` seconds or sooner when kicked, until cancelled."""
        while True:
            self._kicked.clear()
            await self.run_once()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await self._kicked.wait()
