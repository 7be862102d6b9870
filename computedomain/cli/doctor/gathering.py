"""Reading the cluster into a :class:`~.snapshot.Snapshot`: list requests only, nothing written.

What is listed, and why (each list paginated by :meth:`~computedomain.kube.rest.Api.list_all`):

- ComputeDomains in every namespace (the examined ones are chosen from them; the others name
  the owner of a node's label);
- ComputeDomainCliques, DaemonSets, nodes, and ResourceSlices of our driver, cluster-wide;
- pods labelled ``resource.nvidia.com/computeDomain`` (the daemons), cluster-wide;
- pods and ResourceClaims of the examined domains' namespaces (the workloads);
- pods of the kubelet plugin's DaemonSets, recognised by the program they run;
- the events about pods in all those namespaces, and about ComputeDomains in theirs.

Only :func:`gather` does I/O; :func:`select` and :func:`is_plugin_daemon_set` are pure. Errors
come out as :class:`GatherError` with a message that says what could not be read.
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Iterable, Sequence
from typing import Any, Final

import attrs

from computedomain.api import names
from computedomain.cli.doctor.snapshot import Obj, Snapshot, items, labels, name, namespace, section
from computedomain.kube import errors, resources
from computedomain.kube.resources import Resource
from computedomain.kube.rest import Api

# The kubelet plugin's program, under our name and under upstream's (bin/ has both).
PLUGIN_PROGRAMS: Final = ("cd-kubelet-plugin", "compute-domain-kubelet-plugin")


class GatherError(Exception):
    """The cluster could not be read (connection, permissions, CRD missing)."""


class DomainNotFound(GatherError):
    """The named ComputeDomain does not exist."""


@attrs.frozen
class Scope:
    """Which domains to examine: all, those of ``namespace``, or the one named ``name``."""

    namespace: str | None = None
    name: str | None = None


def select(domains: Iterable[Obj], scope: Scope) -> list[Obj]:
    """The domains in ``scope``. Pure; raises DomainNotFound for a named domain that is not
    there (a name without a namespace means namespace ``default``, as kubectl does)."""
    if scope.name is None:
        chosen = [d for d in domains if scope.namespace in (None, namespace(d))]
    else:
        where = scope.namespace or "default"
        chosen = [d for d in domains if namespace(d) == where and name(d) == scope.name]
    if scope.name is not None and not chosen:
        where = scope.namespace or "default"
        msg = f"ComputeDomain {scope.name!r} not found in namespace {where!r}"
        raise DomainNotFound(msg)
    return chosen


def is_plugin_daemon_set(daemon_set: Obj) -> bool:
    """Whether a DaemonSet runs the kubelet plugin (any container's command or args names
    one of :data:`PLUGIN_PROGRAMS`). Pure."""
    template = section(section(daemon_set, "spec"), "template")
    for container in items(section(template, "spec").get("containers")):
        words = [*(container.get("command") or []), *(container.get("args") or [])]
        if any(posixpath.basename(str(w)) in PLUGIN_PROGRAMS for w in words):
            return True
    return False


def _selector(daemon_set: Obj) -> str | None:
    match = section(section(daemon_set, "spec"), "selector").get("matchLabels")
    if not isinstance(match, dict) or not match:
        return None
    return ",".join(f"{k}={v}" for k, v in sorted(match.items()))


async def _list(
    api: Api,
    resource: Resource,
    namespace_: str | None = None,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    required: bool = False,
) -> list[dict[str, Any]]:
    """Every object; a resource the server does not know is empty, or, when ``required``, a
    GatherError saying its CRD is missing."""
    where = f" in namespace {namespace_}" if namespace_ else ""
    try:
        found, _version = await api.list_all(
            resource, namespace_, label_selector=label_selector, field_selector=field_selector
        )
    except errors.NotFound as exc:
        if required:
            msg = (
                f"the {resource.plural}.{resource.group} CRD is not installed (install with "
                "kubectl apply -k deployments/base)"
            )
            raise GatherError(msg) from exc
        return []
    except errors.ApiError as exc:
        msg = f"cannot list {resource.plural}{where}: {exc}"
        raise GatherError(msg) from exc
    return found


async def _per_namespace(
    api: Api, resource: Resource, spaces: Sequence[str], *, field_selector: str | None = None
) -> list[dict[str, Any]]:
    lists = await asyncio.gather(
        *(_list(api, resource, ns, field_selector=field_selector) for ns in spaces)
    )
    return [obj for found in lists for obj in found]


async def gather(api: Api, scope: Scope) -> Snapshot:
    """Read everything the diagnosis needs. Read-only; raises GatherError, DomainNotFound."""
    try:
        all_domains = await _list(api, resources.COMPUTE_DOMAINS, required=True)
    except GatherError as exc:
        # Someone allowed to read one namespace only can still examine it (the owner of a
        # node's label is then named by UID where it lives elsewhere).
        if scope.namespace is None or not isinstance(exc.__cause__, errors.Forbidden):
            raise
        all_domains = await _list(api, resources.COMPUTE_DOMAINS, scope.namespace, required=True)
    domains = select(all_domains, scope)
    if not domains:
        return Snapshot(all_domains=all_domains)
    cliques, daemon_sets, daemon_pods, nodes, slices = await asyncio.gather(
        _list(api, resources.COMPUTE_DOMAIN_CLIQUES, required=True),
        _list(api, resources.DAEMON_SETS),
        _list(api, resources.PODS, label_selector=names.COMPUTE_DOMAIN_LABEL),
        _list(api, resources.NODES),
        _list(api, resources.RESOURCE_SLICES, field_selector=f"spec.driver={names.DRIVER_NAME}"),
    )
    plugin_sets = [ds for ds in daemon_sets if is_plugin_daemon_set(ds)]
    domain_spaces = sorted({namespace(d) for d in domains})
    workload_pods, claims, *plugin_lists = await asyncio.gather(
        _per_namespace(api, resources.PODS, domain_spaces),
        _per_namespace(api, resources.RESOURCE_CLAIMS, domain_spaces),
        *(
            _list(api, resources.PODS, namespace(ds), label_selector=selector)
            for ds in plugin_sets
            if (selector := _selector(ds)) is not None
        ),
    )
    plugin_pods = [pod for found in plugin_lists for pod in found]
    event_spaces = sorted(
        {*domain_spaces, *(namespace(p) for p in daemon_pods), *(namespace(p) for p in plugin_pods)}
    )
    pod_events, domain_events = await asyncio.gather(
        _per_namespace(
            api, resources.EVENTS, event_spaces, field_selector="involvedObject.kind=Pod"
        ),
        _per_namespace(
            api,
            resources.EVENTS,
            domain_spaces,
            field_selector=f"involvedObject.kind={names.COMPUTE_DOMAIN_KIND}",
        ),
    )
    return Snapshot(
        domains=domains,
        all_domains=all_domains,
        cliques=cliques,
        daemon_sets=[ds for ds in daemon_sets if names.COMPUTE_DOMAIN_LABEL in labels(ds)],
        daemon_pods=daemon_pods,
        workload_pods=workload_pods,
        claims=claims,
        slices=slices,
        nodes=nodes,
        plugin_pods=plugin_pods,
        events=[*pod_events, *domain_events],
    )
