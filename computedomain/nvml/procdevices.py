"""Driver facts from procfs: character-device majors and NVIDIA capability files.

IMEX channel device nodes take their major from the ``nvidia-caps-imex-channels`` line of
``/proc/devices``; the daemon's fabric-management node takes its major from ``nvidia-caps`` and
its minor and mode from ``/proc/driver/nvidia/capabilities/fabric-imex-mgmt``
(docs/compatibility.md#daemon-claims, #channel-claims). In tests and the simulation both files live
elsewhere (``ALT_PROC_DEVICES_PATH``, the container driver root). Parsing is pure; ``read_*`` read
one file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import attrs

from computedomain.api.errors import TemporaryError

IMEX_CHANNELS: Final = "nvidia-caps-imex-channels"
NVIDIA_CAPS: Final = "nvidia-caps"


class ProcError(TemporaryError):
    """A procfs fact is missing or unreadable (the driver may not be loaded yet)."""


def char_majors(text: str) -> dict[str, int]:
    """Name -> major of every entry in the "Character devices:" section of /proc/devices."""
    majors: dict[str, int] = {}
    in_char = False
    for raw in text.splitlines():
        line = raw.strip()
        if line == "Character devices:":
            in_char = True
            continue
        if line == "Block devices:":
            break
        if not in_char or not line:
            continue
        number, _, name = line.partition(" ")
        if number.isdigit() and name.strip():
            majors.setdefault(name.strip(), int(number))
    return majors


def read_char_major(path: Path, name: str) -> int:
    """The major of ``name`` in the /proc/devices file at ``path``; raises ProcError."""
    try:
        text = path.read_text()
    except OSError as exc:
        msg = f"cannot read {path}: {exc.strerror or exc}"
        raise ProcError(msg) from exc
    major = char_majors(text).get(name)
    if major is None:
        msg = f"no {name!r} character device in {path} (is the NVIDIA driver loaded?)"
        raise ProcError(msg)
    return major


@attrs.frozen
class Capability:
    """The device node behind an NVIDIA capability file."""

    minor: int
    mode: int  # DeviceFileMode, decimal as the file writes it (e.g. 256 = 0o400)
    modify: int

    def device_path(self) -> str:
        return f"/dev/nvidia-caps/nvidia-cap{self.minor}"


def parse_capability(text: str, *, source: str = "capability file") -> Capability:
    """Parse ``Key: value`` lines (DeviceFileMinor/Mode/Modify, decimal). Raises ProcError."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            values[key.strip()] = value.strip()
    parsed: dict[str, int] = {}
    for key in ("DeviceFileMinor", "DeviceFileMode", "DeviceFileModify"):
        text_value = values.get(key)
        if text_value is None or not text_value.isdigit():
            msg = f"{source}: {key} is missing or not a decimal number ({text_value!r})"
            raise ProcError(msg)
        parsed[key] = int(text_value)
    return Capability(
        minor=parsed["DeviceFileMinor"],
        mode=parsed["DeviceFileMode"],
        modify=parsed["DeviceFileModify"],
    )


def read_capability(path: Path) -> Capability:
    """Read and parse one capability file; raises ProcError."""
    try:
        text = path.read_text()
    except OSError as exc:
        msg = f"cannot read {path}: {exc.strerror or exc}"
        raise ProcError(msg) from exc
    return parse_capability(text, source=str(path))
