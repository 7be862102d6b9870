"""The index this node last held in its clique, remembered across daemon pods.

Why: when every daemon pod of a domain is replaced at once (force-deleted, evicted, a node
drain of the DaemonSet), their clique entries can be pruned before the replacements register.
Without a memory, the replacements race for the lowest free indices and two nodes may swap
theirs; ``nvidia-imex`` then runs with a node id its peers know under another name ("invalid
resource handle"). The domain directory (``IMEXD_DIR``, a hostPath the kubelet plugin keeps
for as long as the domain exists on the node) outlives any one daemon pod, so the daemon keeps
``last-index.json`` there and passes it to the index policy as ``IndexRequest.previous``; the
policy gives it back when it is still free. Uniqueness never depends on this file: the
registration still checks every index against the clique's current entries.

Called by :mod:`computedomain.daemon.assembly` (load at start, save on each new own index).
A file that does not parse is moved aside and reported; the daemon then starts without a
memory.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import attrs

from computedomain.runtime import files, logs

log = logs.get_logger(__name__)

FILE_NAME = "last-index.json"


@attrs.define
class IndexMemory:
    """``last-index.json`` in the domain directory: ``{"cliqueID": ..., "index": n}``."""

    path: Path
    _saved: tuple[str, int] | None = None

    @classmethod
    def in_dir(cls, directory: Path) -> IndexMemory:
        return cls(directory / FILE_NAME)

    def load(self, clique_id: str) -> int | None:
        """The index remembered for ``clique_id``, or None. Blocking; never raises for bad
        content (a corrupt file is moved aside) or a missing file."""
        try:
            raw = files.read_bytes_or_none(self.path)
        except OSError as exc:
            log.warning("cannot read the remembered index", path=str(self.path), error=str(exc))
            return None
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            clique, index = data["cliqueID"], data["index"]
            if not isinstance(clique, str) or isinstance(index, bool) or not isinstance(index, int):
                raise TypeError("cliqueID must be a string and index an integer")
            if index < 0:
                raise ValueError("index must not be negative")
        except (ValueError, TypeError, KeyError) as exc:
            with contextlib.suppress(OSError):
                files.move_aside(self.path, f"not a remembered index: {exc}")
            return None
        self._saved = (clique, index)
        return index if clique == clique_id else None

    def save(self, clique_id: str, index: int) -> None:
        """Remember ``index`` for ``clique_id`` (atomic write; skipped when unchanged).
        Blocking; a write error is logged, not raised (the memory is an optimisation)."""
        if self._saved == (clique_id, index):
            return
        body = json.dumps({"cliqueID": clique_id, "index": index}).encode()
        try:
            files.atomic_write(self.path, body)
        except OSError as exc:
            log.warning("cannot remember the index", path=str(self.path), error=str(exc))
            return
        self._saved = (clique_id, index)
