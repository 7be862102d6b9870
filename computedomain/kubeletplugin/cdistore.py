"""CDI spec files in the CDI root: per-claim specs and the base spec (effectful).

Names are upstream's (``k8s.compute-domain.nvidia.com-claim_<uid>.yaml``,
``k8s.compute-domain.nvidia.com-device_base.yaml``) so runtimes and operators find them where
they expect. Writes are atomic and validated first; claim specs are mode 0600 (upstream's
temp-file default), the base spec 0644. Claim specs are not fsynced: like the checkpoint that
records them (:mod:`~computedomain.kubeletplugin.checkpointstore`) they mean nothing after a
reboot (the kubelet prepares every claim again, and the CDI root is usually a tmpfs, where an
fsync does nothing). Claim UIDs become file names, so each is checked as a safe path
component. Blocking; async callers run these in a thread.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from computedomain.api import names, validation
from computedomain.api.errors import ConfigError
from computedomain.kubeletplugin import cdi
from computedomain.runtime import files

_CLAIM_FILE: Final = re.compile(
    re.escape(f"{names.CDI_VENDOR}-{names.CDI_CLASS_CLAIM}_") + r"(?P<uid>.+)\.yaml"
)


def _safe(uid: str) -> bool:
    try:
        validation.safe_path_component("claim UID", uid)
    except ConfigError:
        return False
    return True


class CdiStore:
    """The CDI root directory of this node."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def ensure_root(self) -> None:
        """Create the CDI root (0750) if missing; raise NotADirectoryError if it is a file."""
        if self.root.exists() and not self.root.is_dir():
            msg = f"CDI root {self.root} exists and is not a directory"
            raise NotADirectoryError(msg)
        self.root.mkdir(mode=0o750, parents=True, exist_ok=True)

    def claim_path(self, claim_uid: str) -> Path:
        validation.safe_path_component("claim UID", claim_uid)
        return self.root / names.cdi_claim_spec_file(claim_uid)

    def write_claim(self, claim_uid: str, spec: Mapping[str, Any]) -> Path:
        """Validate and write a claim spec (overwrites). Raises CdiError or OSError."""
        cdi.validate(spec)
        path = self.claim_path(claim_uid)
        files.atomic_write(path, cdi.to_yaml(spec), mode=0o600, durable=False)
        return path

    def remove_claim(self, claim_uid: str) -> bool:
        """Delete a claim spec; False when there was none. Idempotent."""
        return files.remove_if_present(self.claim_path(claim_uid))

    def claim_uids(self) -> set[str]:
        """UIDs of every claim spec file in the root (for orphan cleanup).

        Only names :meth:`remove_claim` can act on count: a file or a symlink (never a
        directory) whose UID is a safe path component. Anything else named like ours is left
        alone, so one odd entry cannot stop the cleanup of every orphan after it.
        """
        try:
            entries = list(self.root.iterdir())
        except FileNotFoundError:
            return set()
        return {
            m["uid"]
            for p in entries
            if (m := _CLAIM_FILE.fullmatch(p.name)) is not None
            and _safe(m["uid"])
            and (p.is_symlink() or not p.is_dir())
        }

    def write_base(self, spec: Mapping[str, Any]) -> Path:
        """Validate and write the base spec."""
        cdi.validate(spec)
        path = self.root / names.CDI_BASE_SPEC_FILE
        files.atomic_write(path, cdi.to_yaml(spec), mode=0o644)
        return path
