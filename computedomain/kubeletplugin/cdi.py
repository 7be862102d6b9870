"""CDI specs: the container edits a prepared claim injects, in the form runtimes read.

Prepare turns each prepared device into :class:`ContainerEdits` (env, device nodes, mounts);
this module renders them as upstream does (docs/compatibility.md#cdi): one spec per claim, kind
``k8s.compute-domain.nvidia.com/claim``, one device ``<claimUID>-<device>`` per device that has
edits, no spec-level edits; edits de-duplicated, device nodes and mounts sorted by path depth
then lexicographically; ``hostPath`` of each device node set to its path when the host and
container driver roots differ (the root transform); ``cdiVersion`` the minimum version the
content needs, because runtimes with older CDI libraries reject newer
versions. :func:`validate` checks a spec against the CDI rules (names, required fields,
version); the writer refuses to write a spec that fails it. Pure functions only; files are
written by :mod:`computedomain.kubeletplugin.cdistore`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

import attrs

from computedomain.api import names

T = TypeVar("T")
VERSIONS: Final = ("0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0")
_VENDOR_OR_CLASS = re.compile(r"[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?")
_DEVICE_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?")
_HOOK_NAMES: Final = frozenset(
    {"createRuntime", "createContainer", "startContainer", "poststart", "poststop"}
)
MOUNT_OPTIONS: Final = ("rw", "nosuid", "nodev", "bind")
CHANNEL_FILE_MODE: Final = 0o666


class CdiError(ValueError):
    """A spec breaks a CDI rule; the message names the field."""


@attrs.frozen
class DeviceNode:
    """A ``containerEdits.deviceNodes[]`` entry (a char device unless ``type`` says otherwise)."""

    path: str
    major: int = 0
    minor: int = 0
    file_mode: int | None = None
    type: str = "c"
    host_path: str | None = None

    def to_wire(self) -> dict[str, Any]:
        # Field order and omitempty as Go's specs-go marshals them (minor 0 is omitted).
        wire: dict[str, Any] = {"path": self.path}
        if self.host_path:
            wire["hostPath"] = self.host_path
        if self.type:
            wire["type"] = self.type
        if self.major:
            wire["major"] = self.major
        if self.minor:
            wire["minor"] = self.minor
        if self.file_mode is not None:
            wire["fileMode"] = self.file_mode
        return wire


@attrs.frozen
class Mount:
    host_path: str
    container_path: str
    options: tuple[str, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"hostPath": self.host_path, "containerPath": self.container_path}
        if self.options:
            wire["options"] = list(self.options)
        return wire


@attrs.frozen
class ContainerEdits:
    env: tuple[str, ...] = ()
    device_nodes: tuple[DeviceNode, ...] = ()
    mounts: tuple[Mount, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.env or self.device_nodes or self.mounts)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {}
        if self.env:
            wire["env"] = list(self.env)
        if self.device_nodes:
            wire["deviceNodes"] = [d.to_wire() for d in self.device_nodes]
        if self.mounts:
            wire["mounts"] = [m.to_wire() for m in self.mounts]
        return wire


def _depth_key(path: str) -> tuple[int, str]:
    return (path.count("/"), path)


def _unique(items: Iterable[T]) -> tuple[T, ...]:
    return tuple(dict.fromkeys(items))


def simplify(edits: ContainerEdits, *, host_paths: bool = False) -> ContainerEdits:
    """De-duplicate and sort the edits; with ``host_paths`` set each node's hostPath. Pure."""
    nodes = _unique(
        attrs.evolve(n, host_path=n.host_path or n.path) if host_paths else n
        for n in edits.device_nodes
    )
    return ContainerEdits(
        env=_unique(edits.env),
        device_nodes=tuple(sorted(nodes, key=lambda n: _depth_key(n.path))),
        mounts=tuple(sorted(_unique(edits.mounts), key=lambda m: _depth_key(m.container_path))),
    )


def minimum_version(spec: Mapping[str, Any]) -> str:
    """The lowest CDI version that can express ``spec``. Pure."""
    devices: Sequence[Mapping[str, Any]] = spec.get("devices") or ()
    edit_sets = [spec.get("containerEdits") or {}] + [
        d.get("containerEdits") or {} for d in devices
    ]
    needed = "0.3.0"

    def need(version: str) -> None:
        nonlocal needed
        if VERSIONS.index(version) > VERSIONS.index(needed):
            needed = version

    if any(e.get("netDevices") for e in edit_sets):
        need("1.1.0")
    if any(e.get("intelRdt") or e.get("additionalGids") for e in edit_sets):
        need("0.7.0")
    kind = str(spec.get("kind", ""))
    if spec.get("annotations") or any(d.get("annotations") for d in devices):
        need("0.6.0")
    if "." in kind.partition("/")[2]:
        need("0.6.0")
    if any(n.get("hostPath") for e in edit_sets for n in e.get("deviceNodes") or ()):
        need("0.5.0")
    if any(str(d.get("name", ""))[:1].isdigit() for d in devices):
        need("0.5.0")
    if any(m.get("type") for e in edit_sets for m in e.get("mounts") or ()):
        need("0.4.0")
    return needed


def claim_spec(
    claim_uid: str, devices: Sequence[tuple[str, ContainerEdits]], *, host_paths: bool
) -> dict[str, Any] | None:
    """The per-claim spec for ``(device name, edits)`` pairs; None when no device has edits."""
    entries = [
        {
            "name": names.cdi_claim_device_name(claim_uid, device),
            "containerEdits": simplify(edits, host_paths=host_paths).to_wire(),
        }
        for device, edits in devices
        if not edits.empty
    ]
    if not entries:
        return None
    spec: dict[str, Any] = {
        "cdiVersion": "",
        "kind": names.cdi_kind(names.CDI_CLASS_CLAIM),
        "devices": entries,
    }
    spec["cdiVersion"] = minimum_version(spec)
    return spec


def claim_device_id(claim_uid: str, device: str) -> str:
    """``k8s.compute-domain.nvidia.com/claim=<claimUID>-<device>``."""
    return names.cdi_qualified_name(
        names.CDI_CLASS_CLAIM, names.cdi_claim_device_name(claim_uid, device)
    )


BASE_DEVICE_ID: Final = names.cdi_qualified_name(names.CDI_CLASS_DEVICE, names.CDI_BASE_DEVICE)


def _check_edits(edits: Mapping[str, Any], where: str) -> None:
    if not isinstance(edits, Mapping):
        raise CdiError(f"{where}: must be a mapping")
    for i, env in enumerate(edits.get("env") or ()):
        if not isinstance(env, str) or "=" not in env:
            raise CdiError(f"{where}.env[{i}]: {env!r} is not KEY=VALUE")
    for i, node in enumerate(edits.get("deviceNodes") or ()):
        path = node.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            raise CdiError(f"{where}.deviceNodes[{i}].path: must be an absolute path")
        if node.get("type", "c") not in ("b", "c", "u", "p"):
            raise CdiError(f"{where}.deviceNodes[{i}].type: {node.get('type')!r} is invalid")
    for i, mount in enumerate(edits.get("mounts") or ()):
        for key in ("hostPath", "containerPath"):
            if not mount.get(key):
                raise CdiError(f"{where}.mounts[{i}].{key}: required")
    for i, hook in enumerate(edits.get("hooks") or ()):
        if hook.get("hookName") not in _HOOK_NAMES:
            raise CdiError(f"{where}.hooks[{i}].hookName: {hook.get('hookName')!r} is invalid")
        if not str(hook.get("path", "")).startswith("/"):
            raise CdiError(f"{where}.hooks[{i}].path: must be an absolute path")


def validate(spec: Mapping[str, Any]) -> None:
    """Check ``spec`` against the CDI rules; raises CdiError naming the field. Pure."""
    version = spec.get("cdiVersion")
    if version not in VERSIONS:
        raise CdiError(f"cdiVersion: {version!r} is not a known CDI version")
    kind = spec.get("kind")
    vendor, slash, cdi_class = str(kind or "").partition("/")
    if not slash or not _VENDOR_OR_CLASS.fullmatch(vendor):
        raise CdiError(f"kind: {kind!r} has no valid vendor")
    if not _VENDOR_OR_CLASS.fullmatch(cdi_class):
        raise CdiError(f"kind: {kind!r} has no valid class")
    if len(vendor) > 253:
        raise CdiError(f"kind: vendor {vendor!r} is longer than 253 characters")
    devices = spec.get("devices")
    if not devices:
        raise CdiError("devices: at least one device is required")
    seen: set[str] = set()
    for i, device in enumerate(devices):
        name = device.get("name")
        if not isinstance(name, str) or not _DEVICE_NAME.fullmatch(name):
            raise CdiError(f"devices[{i}].name: {name!r} is not a valid CDI device name")
        if name in seen:
            raise CdiError(f"devices[{i}].name: duplicate device {name!r}")
        seen.add(name)
        _check_edits(device.get("containerEdits") or {}, f"devices[{i}].containerEdits")
    if "containerEdits" in spec:
        _check_edits(spec["containerEdits"], "containerEdits")
    needed = minimum_version(spec)
    if VERSIONS.index(str(version)) < VERSIONS.index(needed):
        raise CdiError(f"cdiVersion: {version} is too low for the content (needs {needed})")


_NEEDS_ESCAPE = re.compile(r'[^\x20-\x7e]|["\\]')


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in '"\\':
        return "\\" + char
    code = ord(char)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_PLAIN_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_YAML11_WORDS: Final = frozenset({"y", "yes", "n", "no", "true", "false", "on", "off", "null"})


def _key(key: str) -> str:
    if _PLAIN_KEY.fullmatch(key) and key.lower() not in _YAML11_WORDS:
        return key
    return _scalar(str(key))


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        # Always double-quoted, so no value can be read back as another type.
        return '"' + _NEEDS_ESCAPE.sub(_escape, value) + '"'
    if isinstance(value, Mapping | list) and not value:
        return "{}" if isinstance(value, Mapping) else "[]"
    msg = f"cannot render {type(value).__name__} in a CDI spec"
    raise TypeError(msg)


def _emit(value: Any, indent: str, out: list[str]) -> None:
    """Block-style YAML of mappings, lists and scalars (the shapes CDI specs use)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(item, Mapping | list) and item:
                out.append(f"{indent}{_key(key)}:\n")
                _emit(item, indent + ("" if isinstance(item, list) else "  "), out)
            else:
                out.append(f"{indent}{_key(key)}: {_scalar(item)}\n")
        return
    for item in value:
        if isinstance(item, Mapping | list) and item:
            start = len(out)
            _emit(item, indent + "  ", out)
            out[start] = f"{indent}- {out[start][len(indent) + 2 :]}"
        else:
            out.append(f"{indent}- {_scalar(item)}\n")


def to_yaml(spec: Mapping[str, Any]) -> bytes:
    """The spec as a block-style YAML document (``---`` first, keys in given order). Pure.

    A small emitter for the shapes of CDI specs: every string double-quoted (so no value can
    be read back as another type); several times faster than PyYAML's, even with libyaml,
    for the 2048 device nodes of an ``All`` channel claim.
    """
    out = ["---\n"]
    if spec:
        _emit(spec, "", out)
    else:
        out.append("{}\n")
    return "".join(out).encode()
