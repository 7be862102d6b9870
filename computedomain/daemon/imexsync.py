"""From the membership list to what ``nvidia-imex`` reads: files first, then the keeper.

The registration loop (:mod:`computedomain.daemon.reconcile`) puts each new list into a
:class:`Mailbox`; :func:`run` takes the newest one and hands it to the mode's sync strategy,
chosen once in wiring (:mod:`computedomain.daemon.modes`):

- :class:`DnsSync` (DNS-names mode): rewrite the hosts file (only on change) with
  every slot's name, the own clique's live ones mapped to their IPs and the others to the
  sentinel address, then tell the keeper the live mapping and the own index. The keeper starts
  ``nvidia-imex`` only once the own mapping is in the file (F7), SIGUSR1s it when the mapping
  changed, restarts it when the own index changed.
- :class:`IpSync` (IP mode): once ``numNodes`` daemons are listed, rewrite
  ``nodes.cfg`` with the own clique's IPs; a changed file restarts ``nvidia-imex``.

A list that cannot be applied (an index out of range, F10) is refused without touching the
files, logged and reported; the daemon keeps running with the last good state instead of
crash-looping as upstream does. Modes, files and the invariants F7 and F10:
docs/compatibility.md#dns-names-and-the-hosts-file and #membership-invariants.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Generic, Protocol, TypeVar

import attrs

from computedomain.api.errors import PermanentError
from computedomain.api.models import DaemonInfo
from computedomain.daemon import dnsnames, files, hostsfile
from computedomain.daemon.hostsfile import HostsFile
from computedomain.daemon.keeper import ImexInputs
from computedomain.policies.hookspecs import DnsNamePolicy
from computedomain.runtime import logs

log = logs.get_logger(__name__)

T = TypeVar("T")


@attrs.frozen
class Snapshot:
    """The membership list as last seen, and ``spec.numNodes`` where the object has it."""

    entries: tuple[DaemonInfo, ...]
    num_nodes: int | None = None


class Mailbox(Generic[T]):
    """Holds only the newest value; :meth:`put` never blocks, :meth:`get` waits for a value
    newer than the last one taken."""

    def __init__(self) -> None:
        self._value: T | None = None
        self._fresh = asyncio.Event()

    def put(self, value: T) -> None:
        self._value = value
        self._fresh.set()

    async def get(self) -> T:
        await self._fresh.wait()
        self._fresh.clear()
        assert self._value is not None
        return self._value


class Sync(Protocol):
    async def apply(self, snapshot: Snapshot) -> None:
        """Bring the files and the keeper in line with ``snapshot``. Raises PermanentError
        for a list that cannot be applied, OSError on I/O failure."""
        ...


class DnsSync:
    """DNS-names mode: hosts file plus the mapping and own index for the keeper."""

    def __init__(
        self,
        hosts: HostsFile,
        want: Callable[[ImexInputs], None],
        *,
        clique_id: str,
        node_name: str,
        pod_ip: str,
        policy: DnsNamePolicy,
        limit: int,
    ) -> None:
        self.hosts = hosts
        self._want = want
        self._clique_id = clique_id
        self._node_name = node_name
        self._pod_ip = pod_ip
        self._policy = policy
        self._limit = limit
        self._slot_names = dnsnames.all_names(policy, limit)
        self._managed = frozenset(self._slot_names)
        self.last: dnsnames.HostMap | None = None

    async def apply(self, snapshot: Snapshot) -> None:
        host_map = dnsnames.host_map(
            snapshot.entries,
            clique_id=self._clique_id,
            node_name=self._node_name,
            pod_ip=self._pod_ip,
            policy=self._policy,
            limit=self._limit,
        )
        mapping = dnsnames.slot_mapping(host_map, self._slot_names)

        def transform(current: str) -> str:
            return hostsfile.render(current, mapping, self._managed)

        if host_map != self.last:
            written = await asyncio.to_thread(self.hosts.update, transform)
            if written:
                log.info(
                    "Updated hosts file",
                    path=str(self.hosts.path),
                    mappings=_describe(host_map.as_dict()),
                    unused_slots=len(mapping) - len(host_map.names),
                )
            self.last = host_map
        self._want(ImexInputs(identity=host_map.own_index, names=host_map.names))


class IpSync:
    """IP mode: ``nodes.cfg`` of IPs once every node of the domain is listed."""

    def __init__(
        self, nodes_config: Path, want: Callable[[ImexInputs], None], *, clique_id: str
    ) -> None:
        self.nodes_config = nodes_config
        self._want = want
        self._clique_id = clique_id

    async def apply(self, snapshot: Snapshot) -> None:
        seen, expected = len(snapshot.entries), snapshot.num_nodes
        if expected is None or seen != expected:
            log.info(f"numNodes: {expected}, nodes seen: {seen}")
            return
        text = dnsnames.render_nodes_config(dnsnames.clique_ips(snapshot.entries, self._clique_id))
        await asyncio.to_thread(files.write_if_changed, self.nodes_config, text)
        self._want(ImexInputs(identity=text))


def _describe(mapping: dict[str, str]) -> str:
    if not mapping:
        return "empty"
    return ", ".join(f"{name} -> {ip}" for name, ip in sorted(mapping.items()))


async def run(
    mailbox: Mailbox[Snapshot],
    sync: Sync,
    *,
    on_refused: Callable[[PermanentError], None] = lambda _: None,
) -> None:
    """Apply each newest snapshot until cancelled. Raises OSError when a file cannot be
    written (fatal: the daemon cannot do its job)."""
    while True:
        log.debug("Wait for updated ComputeDomainDaemonInfo list")
        snapshot = await mailbox.get()
        try:
            await sync.apply(snapshot)
        except PermanentError as exc:
            log.error("Refusing the membership list (files left as they are)", error=str(exc))
            on_refused(exc)
