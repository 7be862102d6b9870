"""This node's host-IMEX problem, published on a ComputeDomain for the controller to quote.

With host-managed IMEX (docs/compatibility.md#host-managed-imex-daemons) the controller cannot
see the hosts' daemons; the plugin that waits for one tells it. The annotation
:func:`~computedomain.api.names.host_imex_problem_annotation` of this node holds
``<node>: <why>`` while a channel claim of the domain waits for the host daemon, and is removed
once the daemon answers READY or the node holds no claim of the domain any more. Each node owns
its own key, so a JSON merge patch of that one key cannot undo another writer's change and needs
no resourceVersion. The write is skipped when the cached domain already says the same, and an API
failure is logged, never raised: the claim's own retry (and its Warning event) does not depend on
it. Called by :class:`~computedomain.kubeletplugin.hostchannels.HostChannels`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain.kube.rest import Api
from computedomain.runtime import logs
from computedomain.runtime.cancellation import raise_if_cancelling

log = logs.get_logger(__name__)

MAX_VALUE: Final = 1024


def value(node: str, problem: str) -> str:
    """The annotation's value: ``<node>: <problem>``, on one line, clipped. Pure."""
    text = f"{node}: {' '.join(problem.split())}"
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 3] + "..."


def current(domain: Mapping[str, Any], key: str) -> str | None:
    """The annotation ``key`` of a domain object, if set. Pure."""
    annotations = (domain.get("metadata") or {}).get("annotations") or {}
    found = annotations.get(key) if isinstance(annotations, Mapping) else None
    return found if isinstance(found, str) else None


class DomainAnnotations:
    """:class:`~computedomain.kubeletplugin.ports.HostProblems` over the API."""

    def __init__(
        self,
        api: Api,
        node_name: str,
        latest: Callable[[str], Mapping[str, Any] | None],
    ) -> None:
        self.api = api
        self.node_name = node_name
        self.key = names.host_imex_problem_annotation(node_name)
        self._latest = latest  # the cached domain by UID (fresher than the caller's copy)

    async def report(self, domain: Mapping[str, Any], problem: str | None) -> None:
        meta = domain.get("metadata") or {}
        uid, name, namespace = meta.get("uid"), meta.get("name"), meta.get("namespace")
        if not (isinstance(uid, str) and isinstance(name, str) and isinstance(namespace, str)):
            return
        wanted = value(self.node_name, problem) if problem is not None else None
        if current(self._latest(uid) or domain, self.key) == wanted:
            return
        patch = {"metadata": {"annotations": {self.key: wanted}}}
        try:
            await self.api.patch(resources.COMPUTE_DOMAINS, name, patch, namespace=namespace)
        except errors.NotFound:
            return
        except Exception as exc:  # best effort: the claim's retry does not depend on it
            raise_if_cancelling()
            log.warning(
                "cannot publish the host IMEX problem on the ComputeDomain",
                domain=f"{namespace}/{name}",
                error=str(exc),
            )
            return
        log.info(
            "host IMEX problem published" if wanted else "host IMEX problem cleared",
            domain=f"{namespace}/{name}",
            problem=wanted or "",
        )
