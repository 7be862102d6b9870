"""Lay out a pod's files before its containers start: the hosts file, hostPath checks and
creation by ``type``, emptyDirs, projected volumes, and the device-node placeholders.

Called by :mod:`.podworker` (synchronously: small local file operations). Raises
:class:`VolumeError` (the kubelet's FailedMount) when a hostPath does not have the promised type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from computedomain.runtime import files

from .launch import DevicePlaceholder, hosts_file

__all__ = ["VolumeError", "prepare_pod_files", "write_devices"]


class VolumeError(ValueError):
    """A volume that cannot be set up; the message names the volume."""


def prepare_pod_files(
    pod: Mapping[str, Any],
    pod_dir: Path,
    pod_ip: str,
    sources: Mapping[str, Path],
    *,
    token: str | None,
    ca_pem: bytes | None = None,
) -> None:
    """Write the pod's hosts file and make its volumes (a projected ``ca.crt`` holds
    ``ca_pem``, the API server's CA, when given). Idempotent. Raises :class:`VolumeError`."""
    pod_dir.mkdir(parents=True, exist_ok=True)
    files.atomic_write(pod_dir / "etc-hosts", hosts_file(pod, pod_ip).encode())
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = str(volume.get("name", ""))
        path = sources[name]
        if "hostPath" in volume:
            _host_path(name, path, str(volume["hostPath"].get("type") or ""))
        elif "emptyDir" in volume:
            path.mkdir(parents=True, exist_ok=True)
        elif "projected" in volume:
            _projected(pod, path, volume["projected"], token, ca_pem)


def write_devices(devices: Sequence[DevicePlaceholder]) -> None:
    """Create each simulated device node: a regular file holding its record (JSON)."""
    for device in devices:
        device.source.parent.mkdir(parents=True, exist_ok=True)
        record = {"path": device.target, **device.record}
        device.source.write_text(json.dumps(record) + "\n")


def _host_path(name: str, path: Path, kind: str) -> None:
    if kind == "DirectoryOrCreate":
        path.mkdir(parents=True, exist_ok=True)
    elif kind == "FileOrCreate":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    elif kind == "Directory" and not path.is_dir():
        msg = f"volume {name}: hostPath type check failed: {path} is not a directory"
        raise VolumeError(msg)
    elif kind == "File" and not path.is_file():
        msg = f"volume {name}: hostPath type check failed: {path} is not a file"
        raise VolumeError(msg)
    elif kind == "" and not path.exists():
        path.mkdir(parents=True, exist_ok=True)  # the runtime creates a missing mount source


def _projected(
    pod: Mapping[str, Any],
    path: Path,
    spec: Mapping[str, Any],
    token: str | None,
    ca_pem: bytes | None,
) -> None:
    path.mkdir(parents=True, exist_ok=True)
    meta = pod.get("metadata") or {}
    for source in spec.get("sources") or []:
        if "serviceAccountToken" in source and token is not None:
            target = source["serviceAccountToken"].get("path") or "token"
            files.atomic_write(path / target, token.encode(), mode=0o600)
        for item in (source.get("downwardAPI") or {}).get("items") or []:
            field = (item.get("fieldRef") or {}).get("fieldPath", "")
            value = {
                "metadata.namespace": meta.get("namespace"),
                "metadata.name": meta.get("name"),
            }.get(field)
            if value is not None:
                files.atomic_write(path / str(item.get("path")), str(value).encode())
        for item in (source.get("configMap") or {}).get("items") or []:
            target = path / str(item.get("path"))
            if item.get("key") == "ca.crt" and ca_pem is not None:
                files.atomic_write(target, ca_pem)  # kube-root-ca.crt, as in-cluster config reads
            else:
                target.touch(exist_ok=True)
