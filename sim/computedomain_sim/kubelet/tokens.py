"""Service account credentials for a simulated pod: a TokenRequest for the pod's service
account, written as the projected service-account volume a real pod gets (``token``,
``ca.crt``, ``namespace``) and into a kubeconfig of the pod's own.

Called by :mod:`.podworker`. Where the container can have the volume at its real path (a
private mount namespace, an HTTPS server) it uses its in-cluster configuration, as in
production; elsewhere ``KUBECONFIG`` points at the kubeconfig (:mod:`.launch` decides). Either
way the components authenticate as their service account and the API server enforces RBAC on
them. The token is bound to the pod (``boundObjectRef``) and long-lived (30 days): the Python
client reads a kubeconfig once, so a refreshed file would not reach a running program.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from computedomain.kube.resources import SERVICE_ACCOUNTS
from computedomain.kube.rest import Api
from computedomain.runtime import files

__all__ = [
    "TOKEN_SECONDS",
    "kubeconfig_text",
    "request_token",
    "write_pod_kubeconfig",
    "write_service_account",
]

TOKEN_SECONDS = 30 * 24 * 3600


async def request_token(api: Api, pod: Mapping[str, Any], seconds: int = TOKEN_SECONDS) -> str:
    """A token for the pod's service account, bound to the pod. Raises API errors (NotFound
    when the service account does not exist)."""
    meta = pod.get("metadata") or {}
    account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
    answer = await api.request(
        "POST",
        SERVICE_ACCOUNTS.path(str(meta.get("namespace", "")), str(account), "token"),
        body={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "expirationSeconds": seconds,
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                },
            },
        },
    )
    return str(answer["status"]["token"])


def kubeconfig_text(server: str, token: str, namespace: str, ca_pem: bytes | None = None) -> str:
    """A kubeconfig for ``server`` with ``token`` and ``namespace`` as default; with ``ca_pem``
    (an HTTPS server's CA) as ``certificate-authority-data``. Pure."""
    cluster: dict[str, str] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "sim", "cluster": cluster}],
        "users": [{"name": "pod", "user": {"token": token}}],
        "contexts": [
            {"name": "sim", "context": {"cluster": "sim", "user": "pod", "namespace": namespace}}
        ],
        "current-context": "sim",
    }
    return yaml.safe_dump(config, sort_keys=False)


async def write_pod_kubeconfig(
    api: Api, pod: Mapping[str, Any], server: str, path: Path, ca_pem: bytes | None = None
) -> str:
    """Request a token, write the pod's kubeconfig (mode 0600, trusting ``ca_pem`` when the
    server is HTTPS) and return the token. Raises API errors."""
    token = await request_token(api, pod)
    namespace = str((pod.get("metadata") or {}).get("namespace", "default"))
    text = kubeconfig_text(server, token, namespace, ca_pem)
    await files.write_atomic(path, text.encode(), mode=0o600)
    return token


async def write_service_account(directory: Path, token: str, namespace: str, ca_pem: bytes) -> None:
    """The files of a projected service-account volume (``token`` mode 0600, ``ca.crt`` and
    ``namespace``), as the in-cluster configuration reads them. Raises OSError."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    await files.write_atomic(directory / "token", token.encode(), mode=0o600)
    await files.write_atomic(directory / "ca.crt", ca_pem, mode=0o644)
    await files.write_atomic(directory / "namespace", namespace.encode(), mode=0o644)
