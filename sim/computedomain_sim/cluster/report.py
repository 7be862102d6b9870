"""``computedomain sim status``: the nodes, the driver's components and the ComputeDomains of a
running simulated cluster, as text tables.

Called by :mod:`computedomain_sim.cli.sim_cluster`. :func:`gather` reads through the API (admin
kubeconfig); :func:`render` is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from computedomain.kube import errors
from computedomain.kube.resources import COMPUTE_DOMAINS, NODES, PODS
from computedomain.kube.rest import Api

from .cluster import DRIVER_NAMESPACE
from .topology import RACK_LABEL

__all__ = ["gather", "render"]

Obj = Mapping[str, Any]


async def gather(api: Api) -> dict[str, list[dict[str, Any]]]:
    """Nodes, pods of the driver namespace and ComputeDomains. Raises API errors."""
    nodes, _ = await api.list_all(NODES)
    pods, _ = await api.list_all(PODS, DRIVER_NAMESPACE)
    try:
        domains, _ = await api.list_all(COMPUTE_DOMAINS)
    except errors.NotFound:
        domains = []
    return {"nodes": nodes, "pods": pods, "domains": domains}


def _ready(obj: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=False)]
    lines = [
        "  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=False)).rstrip()
        for row in [header, *rows]
    ]
    return "\n".join(lines)


def render(state: Mapping[str, Any], seen: Mapping[str, Sequence[Obj]]) -> str:
    """The status text. Pure."""
    out = [
        f"cluster: {state.get('phase', '?')}  pid {state.get('pid', '?')}  "
        f"api {state.get('url', '')}",
        f"kubeconfig: {state.get('kubeconfig', '')}  isolation: {state.get('isolation', '')}",
        "",
        "NODES",
    ]
    node_rows = []
    for node in sorted(seen["nodes"], key=lambda n: str(n["metadata"]["name"])):
        addresses = (node.get("status") or {}).get("addresses") or []
        node_rows.append(
            [
                str(node["metadata"]["name"]),
                "Ready" if _ready(node) else "NotReady",
                str(next((a["address"] for a in addresses if a.get("type") == "InternalIP"), "")),
                str((node["metadata"].get("labels") or {}).get(RACK_LABEL, "")),
            ]
        )
    out.append(_table(["NAME", "STATUS", "ADDRESS", "RACK"], node_rows))
    out += ["", f"COMPONENTS ({DRIVER_NAMESPACE})"]
    pod_rows = []
    for pod in sorted(seen["pods"], key=lambda p: str(p["metadata"]["name"])):
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        ready = sum(1 for s in statuses if s.get("ready"))
        restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
        pod_rows.append(
            [
                str(pod["metadata"]["name"]),
                str((pod.get("spec") or {}).get("nodeName") or "<pending>"),
                str((pod.get("status") or {}).get("phase", "")),
                f"{ready}/{len((pod.get('spec') or {}).get('containers') or [])}",
                str(restarts),
                str((pod.get("status") or {}).get("podIP", "")),
            ]
        )
    out.append(_table(["NAME", "NODE", "PHASE", "READY", "RESTARTS", "IP"], pod_rows))
    out += ["", "COMPUTEDOMAINS"]
    domain_rows = [
        [
            f"{d['metadata'].get('namespace')}/{d['metadata']['name']}",
            str((d.get("status") or {}).get("status", "")),
            str(len((d.get("status") or {}).get("nodes") or [])),
        ]
        for d in sorted(
            seen["domains"],
            key=lambda d: (d["metadata"].get("namespace", ""), d["metadata"]["name"]),
        )
    ]
    out.append(_table(["NAME", "STATUS", "NODES"], domain_rows) if domain_rows else "(none)")
    return "\n".join(out) + "\n"
