"""Where one simulated node keeps its files, and how a node path maps to a real path.

Called by :mod:`.kubelet`, :mod:`.launch` and :mod:`computedomain_sim.cluster`. Pure except
:meth:`NodePaths.create`.

Each node has a directory standing for its root filesystem. The kubelet maps a host path on the
node (a hostPath volume, a CDI mount's ``hostPath``, a plugin's socket endpoint) to the same path
under that root: ``/var/lib/kubelet/plugins`` on node ``r0n1`` is
``<node root>/var/lib/kubelet/plugins``. The root is a short symlink (``/tmp/cds-<hash>/<node>``)
so that socket paths under it stay within the 107 bytes a unix socket path may have.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from computedomain.api import names, validation
from computedomain.api.errors import ConfigError

__all__ = ["NodePaths", "PathError"]

SIM_DIR = "/var/lib/cd-sim"  # node-local simulation files (boot id, /proc/devices)
PODS_DIR = "/var/lib/kubelet/pods"
LOGS_DIR = "/var/log/pods"
MAX_SOCKET_PATH = 107


class PathError(ValueError):
    """A node path that is not absolute, or a name that is not a safe path component."""


@attrs.frozen
class NodePaths:
    """The files of one node, under ``root`` (the node's ``/``)."""

    root: Path

    def host(self, node_path: str) -> Path:
        """The real path of ``node_path``; a path already under the root is returned as is.

        Pure. ``..`` cannot climb above the root (the path is normalised first). Raises
        :class:`PathError` for a relative path.
        """
        if not node_path.startswith("/"):
            msg = f"node path {node_path!r} is not absolute"
            raise PathError(msg)
        normal = os.path.normpath(node_path)
        root = os.path.normpath(str(self.root))
        if normal == root or normal.startswith(root + "/"):
            return Path(normal)
        return Path(root + ("" if normal == "/" else normal))

    @property
    def registry_dir(self) -> Path:
        return self.host(names.KUBELET_REGISTRAR_DIR)

    @property
    def plugins_dir(self) -> Path:
        return self.host(names.KUBELET_PLUGINS_DIR)

    @property
    def cdi_dir(self) -> Path:
        return self.host(names.CDI_DEFAULT_ROOT)

    @property
    def sim_dir(self) -> Path:
        return self.host(SIM_DIR)

    @property
    def boot_id_file(self) -> Path:
        return self.sim_dir / "boot_id"

    @property
    def proc_devices_file(self) -> Path:
        return self.sim_dir / "proc-devices"

    def pod_dir(self, pod_uid: str) -> Path:
        """Per-pod files (hosts file, kubeconfig, token, emptyDirs, device placeholders)."""
        return self.host(PODS_DIR) / _component(pod_uid, "pod UID")

    def log_dir(self, namespace: str, name: str, pod_uid: str) -> Path:
        """``/var/log/pods/<ns>_<name>_<uid>``, as the kubelet lays out container logs."""
        parts = [_component(p, "pod identity") for p in (namespace, name, pod_uid)]
        return self.host(LOGS_DIR) / "_".join(parts)

    def create(self) -> None:
        """Create the node's directories (idempotent)."""
        for directory in (self.registry_dir, self.plugins_dir, self.cdi_dir, self.sim_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.host(PODS_DIR).mkdir(parents=True, exist_ok=True)
        self.host(LOGS_DIR).mkdir(parents=True, exist_ok=True)


def _component(value: str, what: str) -> str:
    try:
        return validation.safe_path_component(what, value)
    except ConfigError as exc:
        raise PathError(str(exc)) from exc
