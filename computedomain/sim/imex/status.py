"""The stand-in daemon's JSON status file: what tests read to see the IMEX domain form.

Written (atomically) by :mod:`computedomain.sim.imex.daemon` on every change; read by tests
through :func:`read`. Pure data plus two small file helpers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from computedomain.daemon.files import atomic_write

STATUS_FILE_ENV = "SIM_IMEX_STATUS_FILE"
DEFAULT_STATUS_FILE = "imex-status.json"


@attrs.define
class Status:
    """The stand-in's view of itself and its peers (ids are positions in ``nodes.cfg``)."""

    pid: int
    node_id: int | None = None
    own_ip: str = ""
    # name -> IP as last resolved (at start, or at the last processed SIGUSR1)
    resolved: dict[str, str] = attrs.field(factory=dict)
    # peer id -> IP of every peer it expects to reach
    expected: dict[int, str] = attrs.field(factory=dict)
    connected: list[int] = attrs.field(factory=list)
    inbound: list[int] = attrs.field(factory=list)
    reloads: int = 0
    ignored_signals: int = 0
    serving: bool = False
    stopped: bool = False

    def to_json(self) -> str:
        data = attrs.asdict(self)
        data["expected"] = {str(k): v for k, v in self.expected.items()}
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Status:
        data: dict[str, Any] = json.loads(text)
        data["expected"] = {int(k): v for k, v in data.get("expected", {}).items()}
        return cls(**data)


def write(path: Path, status: Status) -> None:
    atomic_write(path, status.to_json().encode())


def read(path: Path) -> Status | None:
    """The status in ``path``, or None when there is none (yet). Never raises on a missing
    or half-written file."""
    try:
        return Status.from_json(path.read_text())
    except (OSError, ValueError, TypeError):
        return None
