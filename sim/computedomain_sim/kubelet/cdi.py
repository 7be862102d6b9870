"""Read CDI spec files and resolve fully-qualified CDI device ids into container edits.

Called by :mod:`.kubelet` with the ``cdi_device_ids`` a DRA plugin returned from
NodePrepareResources; the container runtime's job in a real cluster. Parsing and resolution are
pure (:func:`parse_spec`, :func:`resolve`); :func:`load_dir` reads a directory.

As CDI specifies: only ``*.json``/``*.yaml`` files directly in the directory count; a device id
is ``<vendor>/<class>=<name>``; resolving a device applies the spec's own ``containerEdits`` and
the device's, in that order; two specs defining the same device make it ambiguous; an id that no
spec defines is an error (the runtime refuses to create the container).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

__all__ = [
    "CdiError",
    "ContainerEdits",
    "DeviceNode",
    "Mount",
    "Registry",
    "load_dir",
    "parse_spec",
    "resolve",
]

# libyaml's safe loader where PyYAML has it: a container start reads every spec of its node, and
# the pure-Python loader is several times slower.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_QUALIFIED = re.compile(
    r"^(?P<vendor>[A-Za-z][A-Za-z0-9_.-]*)/(?P<class>[A-Za-z][A-Za-z0-9_.-]*)="
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9_.:-]*)$"
)


class CdiError(ValueError):
    """A malformed spec or an unresolvable device; the message names the file or id."""


@attrs.frozen
class Mount:
    """A bind mount: ``host_path`` (as the node sees it) at ``container_path``."""

    host_path: str
    container_path: str
    options: tuple[str, ...] = ()

    @property
    def read_only(self) -> bool:
        return "ro" in self.options


@attrs.frozen
class DeviceNode:
    """A device node to create at ``path`` in the container."""

    path: str
    type: str = "c"
    major: int = 0
    minor: int = 0
    file_mode: int | None = None
    host_path: str | None = None


@attrs.frozen
class ContainerEdits:
    """The merged edits of some devices, in application order."""

    env: tuple[str, ...] = ()
    device_nodes: tuple[DeviceNode, ...] = ()
    mounts: tuple[Mount, ...] = ()
    hooks: tuple[Mapping[str, Any], ...] = ()

    def merge(self, other: ContainerEdits) -> ContainerEdits:
        return ContainerEdits(
            self.env + other.env,
            self.device_nodes + other.device_nodes,
            self.mounts + other.mounts,
            self.hooks + other.hooks,
        )

    def env_map(self) -> dict[str, str]:
        """The env edits as a mapping (a later ``K=V`` replaces an earlier one)."""
        out: dict[str, str] = {}
        for item in self.env:
            key, _, value = item.partition("=")
            out[key] = value
        return out


@attrs.frozen
class Registry:
    """Devices by fully-qualified name, each with the spec-level edits prepended."""

    devices: Mapping[str, ContainerEdits]
    ambiguous: frozenset[str] = frozenset()


def parse_spec(doc: Mapping[str, Any], source: str) -> dict[str, ContainerEdits]:
    """Map each device of one spec to its edits (spec edits first). Pure.

    Raises :class:`CdiError` naming ``source`` for a missing ``kind``/``devices`` or a bad name.
    """
    kind = doc.get("kind")
    if not isinstance(kind, str) or kind.count("/") != 1:
        msg = f"{source}: 'kind' must be '<vendor>/<class>', got {kind!r}"
        raise CdiError(msg)
    devices = doc.get("devices")
    if not isinstance(devices, list) or not devices:
        msg = f"{source}: 'devices' must be a non-empty list"
        raise CdiError(msg)
    common = _edits(doc.get("containerEdits") or {}, source)
    out: dict[str, ContainerEdits] = {}
    for device in devices:
        name = device.get("name") if isinstance(device, Mapping) else None
        qualified = f"{kind}={name}"
        if not isinstance(name, str) or not _QUALIFIED.match(qualified):
            msg = f"{source}: invalid device name {name!r}"
            raise CdiError(msg)
        out[qualified] = common.merge(_edits(device.get("containerEdits") or {}, source))
    return out


# What load_dir parsed, per directory and file name, with the file's (inode, mtime, size): a
# spec file is parsed again only when it changed, as a container runtime's CDI cache refreshes
# on change. Every pod start on a node reads the node's whole CDI directory, and parsing its
# specs (the base spec is YAML) again each time was most of that.
_Key = tuple[int, int, int]
_parsed: dict[Path, dict[str, tuple[_Key, dict[str, ContainerEdits] | None]]] = {}


def _parse_file(path: Path) -> dict[str, ContainerEdits] | None:
    try:
        text = path.read_text()
        doc = json.loads(text) if path.suffix == ".json" else yaml.load(text, _YAML_LOADER)
        return parse_spec(doc or {}, str(path))
    except (OSError, ValueError, yaml.YAMLError, AttributeError):
        return None


def load_dir(directory: Path) -> Registry:
    """Parse every spec file directly in ``directory`` (a missing directory is empty).

    Reads files (a file unchanged since the last call is not parsed again). A file that does
    not parse is skipped, so its devices are reported as unresolvable by :func:`resolve` when a
    container asks for them. Safe to call from several threads.
    """
    devices: dict[str, ContainerEdits] = {}
    ambiguous: set[str] = set()
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        _parsed.pop(directory, None)
        return Registry({})
    before = _parsed.get(directory, {})
    now: dict[str, tuple[_Key, dict[str, ContainerEdits] | None]] = {}
    for entry in entries:
        if Path(entry.name).suffix not in (".json", ".yaml"):
            continue
        try:
            if not entry.is_file():
                continue
            info = entry.stat()
        except OSError:
            continue
        key = (info.st_ino, info.st_mtime_ns, info.st_size)
        seen = before.get(entry.name)
        parsed = seen[1] if seen is not None and seen[0] == key else _parse_file(Path(entry.path))
        now[entry.name] = (key, parsed)
        for name, edits in (parsed or {}).items():
            if name in devices:
                ambiguous.add(name)
            devices[name] = edits
    _parsed[directory] = now
    return Registry(devices, frozenset(ambiguous))


def resolve(registry: Registry, device_ids: Sequence[str]) -> ContainerEdits:
    """The merged edits for ``device_ids`` in order. Pure.

    Raises :class:`CdiError` listing every id that is malformed, undefined or ambiguous.
    """
    bad = [
        d
        for d in device_ids
        if not _QUALIFIED.match(d) or d not in registry.devices or d in registry.ambiguous
    ]
    if bad:
        msg = f"unresolvable CDI devices {', '.join(bad)}"
        raise CdiError(msg)
    edits = ContainerEdits()
    for device_id in device_ids:
        edits = edits.merge(registry.devices[device_id])
    return edits


def _edits(raw: Mapping[str, Any], source: str) -> ContainerEdits:
    try:
        return ContainerEdits(
            env=tuple(str(e) for e in raw.get("env") or []),
            device_nodes=tuple(_device_node(d) for d in raw.get("deviceNodes") or []),
            mounts=tuple(
                Mount(str(m["hostPath"]), str(m["containerPath"]), tuple(m.get("options") or []))
                for m in raw.get("mounts") or []
            ),
            hooks=tuple(raw.get("hooks") or []),
        )
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"{source}: invalid containerEdits: {exc}"
        raise CdiError(msg) from exc


def _device_node(raw: Mapping[str, Any]) -> DeviceNode:
    return DeviceNode(
        path=str(raw["path"]),
        type=str(raw.get("type") or "c"),
        major=int(raw.get("major") or 0),
        minor=int(raw.get("minor") or 0),
        file_mode=int(raw["fileMode"]) if raw.get("fileMode") is not None else None,
        host_path=str(raw["hostPath"]) if raw.get("hostPath") else None,
    )


def device_ids(results: Iterable[Sequence[str]]) -> list[str]:
    """Flatten per-device id lists, keeping the first occurrence of each id. Pure."""
    seen: dict[str, None] = {}
    for ids in results:
        for device_id in ids:
            seen.setdefault(device_id, None)
    return list(seen)
