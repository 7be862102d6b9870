"""Where a simulated cluster keeps its state, logs and processes.

Called by :mod:`.cluster` and the ``computedomain sim`` commands. Pure except :meth:`create` and
:meth:`remove`.

``<state>/`` holds ``kubeconfig`` (admin), ``cluster.json`` (what ``sim status`` and ``sim down``
read), ``apiserver/`` (the API server's store), ``nodes/<node>/`` (each node's root directory),
``controlplane/`` (a real control plane's certificates, kubeconfigs and etcd data), ``logs/``
(the cluster process's log and a real control plane's programs' logs; container logs are under
each node's ``var/log/pods``) and ``pids/`` (one file per running container process group, and
per control-plane program). Node roots are reached through short
symlinks ``/tmp/cds-<hash>/<node>`` so socket paths under them stay short.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import attrs

__all__ = ["StateLayout"]

LINK_PARENT = Path("/tmp")


def _resolved(path: str | Path) -> Path:
    return Path(path).resolve()


@attrs.frozen
class StateLayout:
    """The files of one simulated cluster."""

    root: Path = attrs.field(converter=_resolved)

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.root / "cluster.json"

    @property
    def apiserver_dir(self) -> Path:
        return self.root / "apiserver"

    @property
    def control_plane_dir(self) -> Path:
        return self.root / "controlplane"

    @property
    def nodes_dir(self) -> Path:
        return self.root / "nodes"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def cluster_log(self) -> Path:
        return self.logs_dir / "cluster.log"

    @property
    def pids_dir(self) -> Path:
        return self.root / "pids"

    @property
    def link_dir(self) -> Path:
        digest = hashlib.sha256(str(self.root).encode()).hexdigest()[:10]
        return LINK_PARENT / f"cds-{digest}"

    def node_root(self, node: str) -> Path:
        """The short path standing for ``node``'s root directory."""
        return self.link_dir / node

    def create(self, nodes: list[str]) -> None:
        """Make the directories and node links (idempotent)."""
        for directory in (
            self.root,
            self.apiserver_dir,
            self.nodes_dir,
            self.logs_dir,
            self.pids_dir,
        ):
            directory.mkdir(parents=True, exist_ok=True)
        self.link_dir.mkdir(parents=True, exist_ok=True)
        for node in nodes:
            real = self.nodes_dir / node
            real.mkdir(parents=True, exist_ok=True)
            link = self.node_root(node)
            if link.is_symlink() and link.resolve() == real:
                continue
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(real)

    def remove(self) -> None:
        """Delete the node links and the whole state directory (idempotent)."""
        shutil.rmtree(self.link_dir, ignore_errors=True)
        shutil.rmtree(self.root, ignore_errors=True)
