"""The prepare/unprepare state machine: one attempt for one claim.

The contract: docs/compatibility.md#prepare-and-unprepare.

:mod:`computedomain.kubeletplugin.driver` calls :meth:`DeviceState.prepare` and
:meth:`DeviceState.unprepare` once per attempt, holding the node-wide lock; it retries
TemporaryError and reports PermanentError at once. One prepare attempt:

1. read the checkpoint; a ``PrepareAborted`` entry newer than the request refuses the claim
   for good (an unprepare happened while this request waited: never resurrect it, #1162;
   docs/compatibility.md#aborted-prepares-in-the-checkpoint), an older one is replaced like
   no entry; a completed entry returns its devices with no side effect (idempotency);
2. resolve the configs (:mod:`claimplan`) and, for channel devices, look the domain up and
   check the claim's namespace: any problem is permanent and nothing has been written;
3. refuse devices another completed claim holds (retryable: the kubelet unprepares the old
   claim soon, #641, k/k#136269), and IMEX channels a claim of another domain holds (a
   channel is an access boundary; claims of one domain may share theirs);
4. record ``PrepareStarted`` (before any side effect);
5. daemon devices: domain directory, env, mount, fabric node; channel devices: choose channels
   (channel strategy), label the Node, wait until the local daemon is Ready
   (:class:`~computedomain.kubeletplugin.ports.Waiting` until then), device nodes; with
   host-managed IMEX (:mod:`~.hostchannels`) daemon devices are refused before anything is
   written, and a channel device gets its allocated channel once the host's daemon is READY,
   with no label;
6. write the claim's CDI spec, then record ``PrepareCompleted`` and return the devices.

Unprepare reads only the checkpoint: it drops the entry (or marks it ``PrepareAborted`` when a
prepare of the claim may still be running), then releases the label of channel devices (only
if it is the claim's domain and no other claim of the checkpoint holds that domain) and deletes
the CDI spec. Aborted entries expire after :data:`ABORTED_TTL` (on each write and in cleanup).

The file work of an attempt (checkpoint and CDI spec writes, the domain directory) runs on the
event loop, not in a thread: each piece is small and not fsynced (page cache only), attempts are
serialised by the node lock anyway, and a hop to a worker thread and back costs about as much as
the write it would carry (``bench/prepare.py`` shows the split). Reading a checkpoint that
changed on disk, which parses a whole file another process wrote, still goes to a thread, as do
the cleanup loops' scans.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from computedomain.api import configs, names, validation
from computedomain.api.errors import ConfigError, PermanentError, TemporaryError
from computedomain.kubeletplugin import (
    cdi,
    channelclaims,
    claimplan,
    daemonclaims,
    hostchannels,
    wakeups,
)
from computedomain.kubeletplugin.cdistore import CdiStore
from computedomain.kubeletplugin.checkpoint import (
    Checkpoint,
    ClaimEntry,
    ClaimState,
    DeviceType,
    PreparedDevice,
)
from computedomain.kubeletplugin.checkpointstore import CheckpointStore
from computedomain.kubeletplugin.ports import ClusterView, NodeLabeler, Waiting
from computedomain.nvml.procdevices import ProcError
from computedomain.policies.hookspecs import ChannelRequest, ChannelStrategy
from computedomain.proto import dra

# Upstream's TTL (twice its 45 s retry budget): past the longest prepare request here (45 s).
ABORTED_TTL: Final = 90.0
_DOMAIN_ID: Final = "opaque.parameters.domainID"

StrategyFor = Callable[[str | None], ChannelStrategy]


@attrs.frozen
class NodeFacts:
    """What this node is, fixed at startup but for the clique ID, which the refresh replaces
    between attempts (:meth:`DeviceState.set_clique`)."""

    node_name: str
    clique_id: str
    channel_major: int
    cliques_enabled: bool
    host_paths: bool  # host and container driver roots differ: device nodes get hostPath
    domains_root: Path
    proc_devices: Path
    fabric_capability: Path
    channel_count: int = names.IMEX_CHANNEL_COUNT


def claim_label(claim: Mapping[str, Any]) -> str:
    """``<ns>/<name>:<uid>``, as every message names a claim."""
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}:{meta.get('uid', '')}"


def to_kubelet(devices: Sequence[PreparedDevice]) -> tuple[dra.Device, ...]:
    """The wire devices of prepared devices (request names reduced to their base name)."""
    return tuple(
        dra.Device(
            request_names=tuple(r.split("/", 1)[0] for r in d.requests),
            pool_name=d.pool,
            device_name=d.device,
            cdi_device_ids=d.cdi_device_ids,
        )
        for d in devices
    )


def cdi_ids(uid: str, device: PreparedDevice, edits: cdi.ContainerEdits) -> tuple[str, ...]:
    """What the kubelet gets for a device: the base spec first for daemons, then the claim's."""
    ids: list[str] = []
    if device.type is DeviceType.DAEMON:
        ids.append(cdi.BASE_DEVICE_ID)
    if not edits.empty:
        ids.append(cdi.claim_device_id(uid, device.device))
    return tuple(ids)


def strategy_mode(config: configs.ChannelConfig) -> str:
    """Upstream's reading of allocationMode: "All" means every channel, anything else one."""
    return "All" if config.wants_all_channels else "Single"


def held_domains(checkpoint: Checkpoint) -> frozenset[str]:
    """Domains whose label this node's claims hold: those of channel devices of every entry,
    completed or not (a started prepare may have labelled the node already). Pure."""
    return frozenset(
        d.domain_id
        for entry in checkpoint.claims.values()
        for d in entry.devices
        if d.type is DeviceType.CHANNEL
    )


class DeviceState:
    """Prepare and unprepare bodies. Callers serialise attempts (node lock)."""

    def __init__(
        self,
        facts: NodeFacts,
        *,
        checkpoints: CheckpointStore,
        cdi_store: CdiStore,
        cluster: ClusterView,
        labeler: NodeLabeler,
        strategy_for: StrategyFor,
        wall_clock: Callable[[], float],
        on_checkpoint: Callable[[Checkpoint], None] | None = None,
        host: hostchannels.HostChannels | None = None,
    ) -> None:
        self.facts = facts
        self._host = host  # host-managed IMEX (docs/compatibility.md#host-managed-imex-daemons)
        self._checkpoints = checkpoints
        self._cdi = cdi_store
        self._cluster = cluster
        self._labeler = labeler
        self._strategy_for = strategy_for
        self._now = wall_clock
        self._on_checkpoint = on_checkpoint

    def set_clique(self, clique_id: str) -> None:
        """Use ``clique_id`` from the next attempt on. Call it holding the node lock, so that
        no attempt sees two cliques (docs/compatibility.md#clique-id-refresh)."""
        self.facts = attrs.evolve(self.facts, clique_id=clique_id)

    async def _read(self) -> Checkpoint:
        cached = self._checkpoints.cached()  # one stat: the file is unchanged most of the time
        if cached is not None:
            return cached
        return await asyncio.to_thread(self._checkpoints.read)

    def _write(self, checkpoint: Checkpoint, *, first: Callable[[], None] | None = None) -> None:
        """Write the checkpoint (aborted entries past their TTL dropped), on the loop (module doc).

        ``first`` runs just before the write (the file work that must precede the record);
        what it raises propagates and nothing is written then.
        """
        fresh = checkpoint.expire_aborted(self._now(), ABORTED_TTL)
        if first is not None:
            first()
        self._checkpoints.write(fresh)
        if self._on_checkpoint is not None:
            self._on_checkpoint(fresh)

    # --- prepare ---------------------------------------------------------------------------

    async def prepare(
        self, claim: Mapping[str, Any], *, requested_at: float
    ) -> tuple[dra.Device, ...]:
        """One prepare attempt; raises PermanentError or TemporaryError (see module doc)."""
        meta = claim.get("metadata") or {}
        uid, namespace, name = str(meta["uid"]), str(meta["namespace"]), str(meta["name"])
        validation.safe_path_component("metadata.uid", uid)
        checkpoint = await self._read()
        entry = checkpoint.claims.get(uid)
        if entry is not None and entry.refuses(requested_at):
            raise PermanentError(
                f"stale prepare for claim {namespace}/{name}:{uid}: claim prepare was already "
                "aborted (the claim was unprepared while this request was waiting)"
            )
        if entry is not None and entry.completed:
            return to_kubelet(entry.devices)
        plan = claimplan.plan(claim)
        if self._host is not None:
            hostchannels.refuse_daemons(plan)
        domains = self._check_domains(plan, namespace)
        self._check_overlap(checkpoint, uid, plan)
        started = ClaimEntry(
            state=ClaimState.PREPARE_STARTED,
            namespace=namespace,
            name=name,
            at=self._now(),
            devices=tuple(
                PreparedDevice(
                    device=d.device,
                    pool=d.pool,
                    requests=(d.request,),
                    type=d.type,
                    domain_id=d.config.domain_id,
                    admin_access=d.admin_access,
                )
                for d in plan.devices
            ),
        )
        if entry is None or attrs.evolve(entry, at=started.at) != started:
            checkpoint = checkpoint.with_claim(uid, started)
            self._write(checkpoint)
        prepared: list[tuple[PreparedDevice, cdi.ContainerEdits]] = []
        for device in started.devices:
            if device.type is DeviceType.DAEMON:
                edits = self._daemon(device, domains.get(device.domain_id))
                prepared.append((device, edits))
            else:
                if self._host is not None:
                    count = self.facts.channel_count
                    channels = hostchannels.channels(checkpoint, uid, device, count)
                    edits = await self._host.edits(domains[device.domain_id], channels)
                else:
                    channels = self._choose_channels(checkpoint, uid, plan, device)
                    edits = await self._channel(device, domains[device.domain_id], channels)
                prepared.append((attrs.evolve(device, channels=tuple(channels)), edits))
        spec = cdi.claim_spec(
            uid, [(d.device, e) for d, e in prepared], host_paths=self.facts.host_paths
        )

        def write_spec() -> None:
            try:
                if spec is None:
                    self._cdi.remove_claim(uid)
                else:
                    self._cdi.write_claim(uid, spec)
            except OSError as exc:
                raise TemporaryError(f"writing the CDI spec: {exc}") from exc

        final = tuple(attrs.evolve(d, cdi_device_ids=cdi_ids(uid, d, e)) for d, e in prepared)
        completed = attrs.evolve(started, state=ClaimState.PREPARE_COMPLETED, devices=final)
        # The spec is on disk before PrepareCompleted is recorded.
        self._write(checkpoint.with_claim(uid, completed), first=write_spec)
        return to_kubelet(final)

    def _check_domains(
        self, plan: claimplan.ClaimPlan, namespace: str
    ) -> dict[str, Mapping[str, Any]]:
        """Domains of the plan's devices; channel claims need theirs, in their namespace."""
        found: dict[str, Mapping[str, Any]] = {}
        for device in plan.devices:
            domain = self._cluster.domain(device.config.domain_id)
            if domain is not None:
                found[device.config.domain_id] = domain
            if device.type is not DeviceType.CHANNEL:
                continue
            field = f"{device.config_field}.{_DOMAIN_ID}"
            if domain is None:
                raise ConfigError(field, f"ComputeDomain {device.config.domain_id} not found")
            channelclaims.check_namespace(domain, namespace, field)
        return found

    def _check_overlap(self, checkpoint: Checkpoint, uid: str, plan: claimplan.ClaimPlan) -> None:
        wanted = {d.device for d in plan.devices if not d.admin_access}
        for other_uid, other in checkpoint.completed():
            if other_uid == uid:
                continue
            clash = sorted(wanted & other.held_devices())
            if clash:
                raise TemporaryError(
                    f"requested device {clash[0]} is already allocated to different claim "
                    f"{other.namespace}/{other.name}:{other_uid}"
                )

    def _choose_channels(
        self,
        checkpoint: Checkpoint,
        uid: str,
        plan: claimplan.ClaimPlan,
        device: PreparedDevice,
    ) -> list[int]:
        config = next(d.config for d in plan.devices if d.device == device.device)
        assert isinstance(config, configs.ChannelConfig)
        in_use: dict[str, set[int]] = {}
        owner: dict[int, str] = {}
        for other_uid, other in checkpoint.completed():
            if other_uid == uid:
                continue
            for held in other.devices:
                if held.type is DeviceType.CHANNEL:
                    in_use.setdefault(held.domain_id, set()).update(held.channels)
                    if held.domain_id != config.domain_id:  # a channel is a domain's boundary
                        owner.update(dict.fromkeys(held.channels, other_uid))
        strategy = self._strategy_for(strategy_mode(config))
        request = ChannelRequest(
            allocation_mode=config.allocation_mode,
            domain_id=config.domain_id,
            claim_uid=uid,
            in_use={k: frozenset(v) for k, v in in_use.items()},
            channel_count=self.facts.channel_count,
        )
        channels = list(strategy.channels(request))
        if not channels:
            raise TemporaryError(f"channel strategy {strategy.name} found no free IMEX channel")
        for channel in channels:
            if not 0 <= channel < self.facts.channel_count:
                raise PermanentError(
                    f"channel strategy {strategy.name} chose channel {channel}, outside "
                    f"0..{self.facts.channel_count - 1}"
                )
            if channel in owner:
                raise TemporaryError(
                    f"channel {channel} already allocated by claim {owner[channel]} "
                    "(according to checkpoint)"
                )
        return channels

    def _daemon(
        self, device: PreparedDevice, domain: Mapping[str, Any] | None
    ) -> cdi.ContainerEdits:
        if domain is None:
            raise TemporaryError(f"compute domain not found: {device.domain_id}")
        meta = domain.get("metadata") or {}
        identity = daemonclaims.Domain(
            uid=device.domain_id,
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "")),
        )
        host_dir, fabric = self._daemon_files(device.domain_id)
        return daemonclaims.edits(identity, self.facts.clique_id, host_dir, fabric)

    def _daemon_files(self, domain_id: str) -> tuple[Path, cdi.DeviceNode | None]:
        """The domain directory (created) and the fabric node: the file work of a daemon
        device. Blocking (small, see the module doc); raises TemporaryError."""
        try:
            host_dir = daemonclaims.ensure_domain_dir(self.facts.domains_root, domain_id)
        except OSError as exc:
            raise TemporaryError(f"creating the domain directory: {exc}") from exc
        if not self.facts.clique_id:
            return host_dir, None
        try:
            fabric = daemonclaims.fabric_node(self.facts.proc_devices, self.facts.fabric_capability)
        except ProcError as exc:
            raise TemporaryError(f"fabric-imex-mgmt device: {exc}") from exc
        return host_dir, fabric

    async def _channel(
        self, device: PreparedDevice, domain: Mapping[str, Any], channels: Sequence[int]
    ) -> cdi.ContainerEdits:
        await self._labeler.ensure(device.domain_id)
        clique = None
        if self.facts.cliques_enabled and self.facts.clique_id:
            clique = self._cluster.clique(
                names.clique_object_name(device.domain_id, self.facts.clique_id)
            )
        # Re-read the domain: the status may have changed since the attempt began.
        domain = self._cluster.domain(device.domain_id) or domain
        readiness = channelclaims.assess(
            self.facts.node_name,
            domain,
            clique,
            cliques_enabled=self.facts.cliques_enabled,
            clique_id=self.facts.clique_id,
        )
        if not readiness.ready:
            reason = channelclaims.wait_reason(
                domain,
                self.facts.node_name,
                self.facts.clique_id,
                readiness,
                self._cluster.daemon_pod(device.domain_id),
            )
            raise Waiting(
                f"current node not ready in ComputeDomain {channelclaims.domain_ref(domain)} "
                f"({device.domain_id})",
                reason=reason,
                wake_on=(
                    wakeups.domain_key(device.domain_id),
                    wakeups.domain_node_key(device.domain_id, self.facts.node_name),
                ),
            )
        return channelclaims.edits(
            channels, self.facts.channel_major, clique_id=self.facts.clique_id
        )

    # --- unprepare -------------------------------------------------------------------------

    async def unprepare(self, ref: dra.ClaimRef, *, prepare_in_flight: bool = False) -> None:
        """One unprepare attempt (checkpoint only). Idempotent; raises TemporaryError.

        The entry is marked ``PrepareAborted`` when a prepare of the claim may still be
        running: the entry was only started (a request was interrupted or is waiting), or the
        caller knows a prepare request for it is in flight; the mark is (re)stamped now then,
        even over an older one, since the request in flight may have begun after it. A
        completed claim with no request in flight is simply dropped (a new request starts after
        the unprepare and may prepare it again), and an aborted entry with none is left as it
        is until it expires.

        The entry goes first, then what it held (the label, the CDI spec): upstream deletes the
        spec first, so a full disk or a crash before the checkpoint write left a completed entry
        whose spec was gone, and the next prepare returned CDI IDs of a missing spec. Here an
        attempt cut short leaves no live entry, and the retry finishes the work: a claim with no
        live entry (none, or aborted) still has its spec deleted, and the label released when
        no claim of the checkpoint holds its domain (which also frees a node whose checkpoint a
        reboot reset).
        """
        validation.safe_path_component("uid", ref.uid)
        checkpoint = await self._read()
        entry = checkpoint.claims.get(ref.uid)
        live = entry if entry is not None and not entry.aborted else None
        if prepare_in_flight or (live is not None and not live.completed):
            checkpoint = checkpoint.aborted(ref.uid, ref.namespace, ref.name, self._now())
            self._write(checkpoint)
        elif live is not None:
            checkpoint = checkpoint.without_claim(ref.uid)
            self._write(checkpoint)
        # The label and the CDI spec are independent: a failure to delete the spec does not
        # keep the label; the label's error is raised first, and the retry redoes both.
        spec_error: OSError | None = None
        try:
            self._cdi.remove_claim(ref.uid)
        except OSError as exc:
            spec_error = exc
        await self._release_labels(live, checkpoint)
        if spec_error is not None:
            raise TemporaryError(f"deleting the CDI spec: {spec_error}") from spec_error

    async def _release_labels(self, entry: ClaimEntry | None, checkpoint: Checkpoint) -> None:
        """Release the label a channel device of ``entry`` held unless another claim of
        ``checkpoint`` (the one just written, without ``entry``) still holds that domain, or
        (no live entry) any label no claim of ``checkpoint`` holds. Raises TemporaryError.

        Upstream removes the label on every channel unprepare whose domain matches; but two
        claims of one domain can hold it at once (admin access shares a channel; a started
        prepare next to a completed one), and a completed claim's prepare returns without
        labelling again, so its node would stay unlabelled while its workload runs."""
        held = held_domains(checkpoint)
        if self._host is not None:  # no label; clear this node's problem on the domain
            for domain in {d.domain_id for d in entry.devices} if entry else ():
                if domain not in held:
                    await self._host.released(self._cluster.domain(domain))
            return
        if entry is None:
            await self._labeler.release_unheld(held)
            return
        for domain in {d.domain_id for d in entry.devices if d.type is DeviceType.CHANNEL}:
            if domain not in held:
                await self._labeler.release(domain)

    async def expire_aborted(self) -> int:
        """Drop aborted entries past :data:`ABORTED_TTL` now (the periodic cleanup does it
        too, so they go without waiting for a prepare). Returns how many went; callers hold
        the node lock."""
        checkpoint = await self._read()
        fresh = checkpoint.expire_aborted(self._now(), ABORTED_TTL)
        if fresh is checkpoint:
            return 0
        self._write(fresh)
        return len(checkpoint.claims) - len(fresh.claims)

    async def forget(self, uid: str) -> None:
        """Unprepare a stale claim found by cleanup (its namespace and name from the entry)."""
        checkpoint = await self._read()
        entry = checkpoint.claims.get(uid)
        if entry is None or entry.aborted:
            return
        await self.unprepare(dra.ClaimRef(entry.namespace, uid, entry.name), prepare_in_flight=True)
