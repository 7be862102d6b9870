"""Domains served by the hosts' ``nvidia-imex`` (docs/compatibility.md#host-managed-imex-daemons).

With host-managed IMEX there is no daemon DaemonSet, daemon pod or clique to examine, and
``status.status`` is always Ready. A domain is recognised by the reason of its ``Ready``
condition (``HostIMEXDaemonsManaged`` or ``HostIMEXDaemonNotReady``, set by the controller) or
by a host problem a kubelet plugin published on it; each such problem (one per node, the
annotation the controller quotes) becomes a ``HostIMEXNotReady`` finding on that node. Pure;
called by :mod:`~computedomain.cli.doctor.diagnosis`.
"""

from __future__ import annotations

from computedomain.api import imex, names
from computedomain.cli.doctor.domainparts import DomainParts
from computedomain.cli.doctor.findings import Cause, Finding, Subject
from computedomain.cli.doctor.snapshot import items, section
from computedomain.controller import hoststatus


def is_host_managed(parts: DomainParts) -> bool:
    """Whether the controller serves ``parts`` in host-managed mode. Pure."""
    status = section(parts.domain, "status")
    ready = next((c for c in items(status.get("conditions")) if c.get("type") == "Ready"), {})
    reasons = (hoststatus.REASON_HOST_READY, hoststatus.REASON_HOST_NOT_READY)
    return ready.get("reason") in reasons or bool(hoststatus.host_problems(parts.domain))


def check(parts: DomainParts) -> list[Finding]:
    """One finding per node whose host daemon keeps a claim of the domain waiting. Pure."""
    out = []
    for text in hoststatus.host_problems(parts.domain):
        node, sep, why = text.partition(": ")
        if not sep:
            node, why = "", text
        remedy = (
            f"on {node or 'the node'}: systemctl status nvidia-imex; "
            f"nvidia-imex-ctl -q --u={imex.DEFAULT_HOST_SOCKET_PATH} (or IMEX_HOST_SOCKET_PATH) "
            "must print READY (docs/operations.md#host-managed-imex-daemons)"
        )
        subject = Subject("Node", node or names.host_imex_problem_annotation(""))
        out.append(Finding(parts.uid, Cause.HOST_IMEX_NOT_READY, subject, why, remedy, node))
    return out
