"""The stand-in daemon's JSON status file: what tests read to see the IMEX domain form.

Written (atomically) by :mod:`computedomain_sim.imex.daemon` on every change; read by tests
through :func:`read`. Pure data plus two small file helpers.

Standard library only (``json``, ``os``): every simulated node starts a stand-in, so what this
module imports is paid once per daemon (attrs and the package's file helpers, which bring
asyncio, were a fifth of a stand-in's start-up).
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

STATUS_FILE_ENV = "SIM_IMEX_STATUS_FILE"
DEFAULT_STATUS_FILE = "imex-status.json"

_FIELDS = (
    "pid",
    "node_id",
    "own_ip",
    "resolved",
    "expected",
    "connected",
    "inbound",
    "reloads",
    "ignored_signals",
    "serving",
    "stopped",
)


class Status:
    """The stand-in's view of itself and its peers (ids are positions in ``nodes.cfg``).

    ``resolved``: name -> IP as last resolved (at start, or at the last processed SIGUSR1);
    ``expected``: peer id -> IP of every peer it expects to reach; ``connected``: peers it
    reached (hello answered by the right id); ``inbound``: peers connected to it.
    """

    __slots__ = _FIELDS

    def __init__(
        self,
        pid: int,
        *,
        node_id: int | None = None,
        own_ip: str = "",
        resolved: dict[str, str] | None = None,
        expected: dict[int, str] | None = None,
        connected: list[int] | None = None,
        inbound: list[int] | None = None,
        reloads: int = 0,
        ignored_signals: int = 0,
        serving: bool = False,
        stopped: bool = False,
    ) -> None:
        self.pid = pid
        self.node_id = node_id
        self.own_ip = own_ip
        self.resolved: dict[str, str] = {} if resolved is None else resolved
        self.expected: dict[int, str] = {} if expected is None else expected
        self.connected: list[int] = [] if connected is None else connected
        self.inbound: list[int] = [] if inbound is None else inbound
        self.reloads = reloads
        self.ignored_signals = ignored_signals
        self.serving = serving
        self.stopped = stopped

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELDS}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Status) and self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items())
        return f"Status({fields})"

    def to_json(self) -> str:
        data = self.as_dict()
        data["expected"] = {str(k): v for k, v in self.expected.items()}
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Status:
        """Raises ValueError for text that is not JSON, TypeError for unknown fields."""
        data: dict[str, Any] = json.loads(text)
        data["expected"] = {int(k): v for k, v in data.get("expected", {}).items()}
        return cls(**data)


def write(path: str | Path, status: Status) -> None:
    """Replace ``path`` atomically (a temporary file next to it, then a rename): a reader sees
    the old status or the new one. Not fsynced: tests read it while the process runs."""
    directory, name = os.path.split(os.fspath(path))
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    with open(temporary, "w", encoding="utf-8") as file:
        file.write(status.to_json())
    os.replace(temporary, path)


def read(path: str | Path) -> Status | None:
    """The status in ``path``, or None when there is none (yet). Never raises on a missing
    or half-written file."""
    try:
        with open(path, encoding="utf-8") as file:
            return Status.from_json(file.read())
    except (OSError, ValueError, TypeError, AttributeError):
        return None
