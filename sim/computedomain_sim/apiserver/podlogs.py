"""``pods/log``: a container's log as plain text, so ``kubectl logs`` works on the simulation.

The API server has no kubelet to ask; whoever runs the pods (the simulated cluster) sets
:attr:`.state.ApiState.pod_logs` to a function that names the log files of one container
(oldest restart first). Without it the subresource answers 404, as before. Supported query
parameters: ``container`` (required when the pod has several), ``previous`` (the restart before
the current one), ``tailLines`` and ``limitBytes``; ``follow`` returns what is there now.

Called by :mod:`.subresources`; reads the pod through :mod:`.writes` and the files itself
(small local reads, like the kubelet's). Raises :class:`.status.ApiStatusError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from . import status, writes
from .registry import ResourceType
from .state import ApiState

__all__ = ["LogFiles", "respond"]

# (pod, container name) -> the container's log files, oldest restart first.
LogFiles = Callable[[Mapping[str, Any], str], Sequence[Path]]


def _int(query: Mapping[str, str], name: str) -> int | None:
    if name not in query:
        return None
    try:
        value = int(query[name])
    except ValueError:
        raise status.bad_request(f"{name}: must be an integer, got {query[name]!r}") from None
    if value < 0:
        raise status.bad_request(f"{name}: must be non-negative")
    return value


def _container(pod: Mapping[str, Any], asked: str) -> str:
    spec = pod.get("spec") or {}
    names = [str(c.get("name")) for c in spec.get("containers") or []]
    every = names + [str(c.get("name")) for c in spec.get("initContainers") or []]
    name = str(pod["metadata"]["name"])
    if asked:
        if asked not in every:
            msg = f"container {asked} is not valid for pod {name}"
            raise status.bad_request(msg)
        return asked
    if len(names) != 1:
        msg = (
            f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
        )
        raise status.bad_request(msg)
    return names[0]


def select(text: bytes, tail_lines: int | None, limit_bytes: int | None) -> bytes:
    """The last ``tail_lines`` lines, then at most ``limit_bytes`` bytes. Pure."""
    if tail_lines is not None:
        lines = text.splitlines(keepends=True)
        text = b"".join(lines[len(lines) - tail_lines :]) if tail_lines else b""
    if limit_bytes is not None:
        text = text[:limit_bytes]
    return text


def respond(
    request: web.BaseRequest, state: ApiState, rt: ResourceType, namespace: str, name: str
) -> web.Response:
    """The log of one container of the pod ``namespace/name``."""
    if state.pod_logs is None:
        raise status.ApiStatusError(
            404, "NotFound", "the server could not find the requested resource"
        )
    pod = writes.get_current(state, rt, namespace, name).decode()
    query = request.query
    container = _container(pod, query.get("container", ""))
    node = (pod.get("spec") or {}).get("nodeName") or ""
    try:
        files = list(state.pod_logs(pod, container)) if node else []
    except ValueError as exc:  # a name that cannot be a path component
        raise status.bad_request(str(exc)) from exc
    previous = query.get("previous", "") in ("true", "1")
    position = -2 if previous else -1  # the restart before the current one, or the current
    wanted = files[position] if len(files) >= -position else None
    if wanted is None:
        what = "previous terminated container" if previous else "container"
        msg = f'{what} "{container}" in pod "{name}" is not available'
        raise status.bad_request(msg)
    try:
        text = wanted.read_bytes()
    except OSError as exc:
        raise status.bad_request(f"cannot read the log of container {container}: {exc}") from exc
    text = select(text, _int(query, "tailLines"), _int(query, "limitBytes"))
    return web.Response(body=text, content_type="text/plain", charset="utf-8")
