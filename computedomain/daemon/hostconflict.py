"""Recognising why ``nvidia-imex`` cannot run on this node, in words a user can act on.

:class:`~computedomain.daemon.process.ImexProcess` feeds every line the child prints through
:func:`detect`; the keeper (:mod:`computedomain.daemon.keeper`) reports a finding once per
child as a Warning event on the daemon pod and holds the entry ``NotReady`` while it lasts
(docs/operations.md#troubleshooting). Pure.
"""

from __future__ import annotations

import enum

import attrs

# What nvidia-imex prints in each case.
SESSION_IN_USE_MARKER = "NV_ERR_IN_USE"
NO_INTERFACE_MARKER = "No matching network interface found"


class Reason(enum.StrEnum):
    """Event reasons (CamelCase, as Kubernetes event reasons are)."""

    SESSION_IN_USE = "IMEXSessionHeldByHost"
    NO_INTERFACE = "IMEXNoMatchingInterface"


@attrs.frozen
class Finding:
    reason: Reason
    line: str


@attrs.frozen
class Context:
    """What the messages name: the node, the own pod IP and the files IMEX reads."""

    node_name: str
    pod_ip: str
    hosts_file: str
    nodes_config: str


def detect(line: str) -> Finding | None:
    """The host problem ``line`` reveals, if any. Pure."""
    if SESSION_IN_USE_MARKER in line:
        return Finding(Reason.SESSION_IN_USE, line.strip())
    if NO_INTERFACE_MARKER.lower() in line.lower():
        return Finding(Reason.NO_INTERFACE, line.strip())
    return None


def message(finding: Finding, context: Context) -> str:
    """The event message: what failed, why, and what to do. Pure."""
    if finding.reason is Reason.SESSION_IN_USE:
        return (
            "nvidia-imex cannot start: the IMEX session is held by a host nvidia-imex.service "
            f"(NV_ERR_IN_USE); stop and disable it on node {context.node_name}: "
            "systemctl disable --now nvidia-imex"
        )
    return (
        "nvidia-imex cannot start: no local network interface matches an address of "
        f"{context.nodes_config} (this daemon's name must resolve to the pod IP "
        f"{context.pod_ip} through {context.hosts_file}); check the pod network and that no "
        "other writer rewrites the hosts file"
    )
