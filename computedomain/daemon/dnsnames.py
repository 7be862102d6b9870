"""Names of daemons: the static ``nodes.cfg`` and the name→IP mapping of a clique.

Pure functions over the membership list, used by :mod:`computedomain.daemon.imexsync` (which
writes what they compute) and by the property suites. The DNS-name policy
(:class:`~computedomain.policies.hookspecs.DnsNamePolicy`) turns an index into a host name; the
built-in reproduces upstream's ``compute-domain-daemon-%04d``.

DNS mode: ``nodes.cfg`` lists the names of every index ``0..max-1`` and never changes; the
hosts file maps the name of every index, in index order, to the IP of the own clique's live
entry holding it or else to the sentinel address (:func:`slot_mapping`). IP mode:
``nodes.cfg`` lists the IPs of the own clique's entries in list order
(docs/compatibility.md#dns-names-and-the-hosts-file).

Unlike upstream, we key the comparison on the whole name→IP mapping (not the set of IPs, hazard
H1) and remember the own index, so a changed own index can restart ``nvidia-imex`` (H2; both in
docs/compatibility.md#upstream-hazards).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from computedomain.api import names
from computedomain.api.errors import PermanentError
from computedomain.api.models import DaemonInfo
from computedomain.policies.hookspecs import DnsNamePolicy


class IndexOutOfRange(PermanentError, ValueError):
    """A same-clique entry carries an index outside ``[0, max)`` (invariant F10)."""


class DuplicateName(PermanentError, ValueError):
    """The DNS-name policy gave two indices the same name."""


@attrs.frozen
class HostMap:
    """What ``nvidia-imex`` must be able to resolve, and which node it is itself.

    ``names`` is name → IP (a sorted tuple of pairs, so values compare and hash by content);
    ``own_index`` is the own entry's index when that entry carries the own IP (the own mapping
    is present), else None.
    """

    names: tuple[tuple[str, str], ...] = ()
    own_index: int | None = None

    def as_dict(self) -> dict[str, str]:
        return dict(self.names)


def all_names(policy: DnsNamePolicy, limit: int) -> tuple[str, ...]:
    """The name of every index in ``[0, limit)``. Pure; raises DuplicateName."""
    result = tuple(policy.dns_name(i) for i in range(limit))
    if len(set(result)) != len(result):
        msg = f"DNS-name policy {policy.name!r} gives two indices below {limit} the same name"
        raise DuplicateName(msg)
    return result


def render_nodes_config(lines: Iterable[str]) -> str:
    """``nodes.cfg`` text: one newline-terminated line per entry (names or IPs). Pure."""
    return "".join(f"{line}\n" for line in lines)


def host_map(
    entries: Iterable[DaemonInfo],
    *,
    clique_id: str,
    node_name: str,
    pod_ip: str,
    policy: DnsNamePolicy,
    limit: int,
) -> HostMap:
    """The mapping of the entries of ``clique_id`` (others are ignored, e.g. ``index -1``).

    Pure. Raises IndexOutOfRange when a same-clique entry's index is outside ``[0, limit)``.
    Should two entries share an index (which the registration rules forbid), the one whose node
    name sorts first keeps the name, so every daemon decides the same way.
    """
    mapping: dict[str, str] = {}
    own_index: int | None = None
    for entry in sorted(entries, key=lambda e: e.node_name):
        if entry.clique_id != clique_id:
            continue
        if not 0 <= entry.index < limit:
            msg = (
                f"daemon {entry.node_name} has index {entry.index}, outside "
                f"[0, {limit}) (maxNodesPerIMEXDomain)"
            )
            raise IndexOutOfRange(msg)
        mapping.setdefault(policy.dns_name(entry.index), entry.ip_address)
        if entry.node_name == node_name and entry.ip_address == pod_ip:
            own_index = entry.index
    return HostMap(names=tuple(sorted(mapping.items())), own_index=own_index)


def slot_mapping(host_map: HostMap, slot_names: Sequence[str]) -> dict[str, str]:
    """Name → IP of every slot, in the order of ``slot_names`` (index order, from
    :func:`all_names`): a live entry's IP, else the sentinel address. Pure; names of
    ``host_map`` outside ``slot_names`` cannot occur (host_map refuses their indices)."""
    live = host_map.as_dict()
    return {name: live.get(name, names.HOSTS_SENTINEL_IP) for name in slot_names}


def clique_ips(entries: Iterable[DaemonInfo], clique_id: str) -> tuple[str, ...]:
    """IP mode: the IPs of the own clique's entries, in list order. Pure."""
    return tuple(e.ip_address for e in entries if e.clique_id == clique_id)
