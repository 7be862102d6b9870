"""Hardware profile documents: the one format that both NVML stand-ins serve.

A profile document (JSON; the format is described in docs/nvml-mock.md) says what NVML answers
on one node: the driver and NVML versions, the fabric-info struct versions the driver accepts,
and each GPU with its PCI identity and fabric info. The named profiles live in ``profiles/``; the
fake backend (:mod:`computedomain.nvml.fake`) answers from them in Python and the mock
``libnvidia-ml.so.1`` (``nvml/mock``, C) answers from them through the C ABI, so the real backend
on the mock can be compared with the fake field by field. This reader and the C one check the
same rules in the same order and name the field and the reason alike. Pure, except :func:`read`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from computedomain.api.errors import ConfigError
from computedomain.nvml.types import NVML_SUCCESS, FabricInfo

PROFILES_DIR: Final = Path(__file__).parent / "profiles"
MAX_GPUS: Final = 64
# Longest strings, one less than NVML's buffer sizes (the C side copies them into them).
VERSION_MAX: Final = 79
NAME_MAX: Final = 95
UINT32_MAX: Final = 0xFFFFFFFF
FABRIC_STRUCT_VERSIONS: Final = (2, 3)

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_BUS_ID = re.compile(r"[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]")
_HEX32 = re.compile(r"0[xX][0-9A-Fa-f]{1,8}")
_DOCUMENT_KEYS: Final = frozenset(
    {
        "description",
        "driverVersion",
        "nvmlVersion",
        "cudaDriverVersion",
        "initReturn",
        "gpus",
        "fabricInfoVersions",
    }
)
_GPU_KEYS: Final = frozenset(
    {
        "name",
        "uuid",
        "pciBusId",
        "pciDeviceId",
        "pciSubSystemId",
        "architecture",
        "cudaComputeCapability",
        "fabric",
    }
)
# In the order the C reader checks them.
_FABRIC_KEYS: Final = (
    "return",
    "clusterUuid",
    "cliqueId",
    "state",
    "status",
    "healthMask",
    "healthSummary",
)


@attrs.frozen
class GpuSpec:
    """One GPU of a profile. ``fabric`` is set exactly when ``fabric_return`` is success."""

    name: str
    uuid: str
    pci_bus_id: str  # as written; NVML reports it upper-case
    pci_device_id: int
    pci_subsystem_id: int
    architecture: int  # nvmlDeviceArchitecture_t
    compute_capability: tuple[int, int]
    fabric_return: int = NVML_SUCCESS
    fabric: FabricInfo | None = None  # health_mask and health_summary always set


@attrs.frozen
class Document:
    """A whole profile: what NVML answers on one node."""

    driver_version: str
    nvml_version: str
    cuda_driver_version: int
    fabric_info_versions: tuple[int, ...]  # struct versions of nvmlDeviceGetGpuFabricInfoV
    gpus: tuple[GpuSpec, ...]
    init_return: int = NVML_SUCCESS
    description: str = ""


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {
        int: "an integer",
        str: "a string",
        list: "an array",
        dict: "an object",
    }.get(type(value), "a value")


def _known(data: Mapping[str, Any], field: str, allowed: Collection[str]) -> None:
    for key in data:
        if key not in allowed:
            raise ConfigError(field, f'unknown member "{key}"')


def _integer(
    data: Mapping[str, Any],
    key: str,
    field: str,
    high: int,
    *,
    default: int | None = None,
    low: int = 0,
) -> int:
    if key not in data:
        if default is None:
            raise ConfigError(field, "is required")
        return default
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool):
        got = _type_name(value)
        raise ConfigError(field, f"must be an integer from {low} to {high} (got {got})")
    if not low <= value <= high:
        raise ConfigError(field, f"must be an integer from {low} to {high} (got {value})")
    return value


def _string(
    data: Mapping[str, Any], key: str, field: str, longest: int, *, required: bool = True
) -> str:
    if key not in data:
        if required:
            raise ConfigError(field, "is required")
        return ""
    value = data[key]
    if not isinstance(value, str):
        raise ConfigError(field, "must be a string")
    if "\0" in value:
        raise ConfigError(field, "must not contain NUL characters")
    length = len(value.encode())
    if not 1 <= length <= longest:
        raise ConfigError(field, f"must be 1 to {longest} characters long (got {length})")
    return value


def _object(value: object, field: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(field, "must be an object")
    return value


def _fabric(value: object, field: str) -> tuple[int, FabricInfo | None]:
    data = _object(value, field)
    _known(data, field, _FABRIC_KEYS)
    code = _integer(data, "return", f"{field}.return", UINT32_MAX, default=0)
    if code != NVML_SUCCESS:
        extra = [key for key in _FABRIC_KEYS[1:] if key in data]
        if extra:
            raise ConfigError(
                field,
                f'"{extra[0]}" is not allowed when "return" is not 0 '
                "(the call fails, so it fills nothing)",
            )
        return code, None
    if "clusterUuid" not in data:
        raise ConfigError(f"{field}.clusterUuid", "is required")
    cluster = data["clusterUuid"]
    if not isinstance(cluster, str) or not _UUID.fullmatch(cluster):
        raise ConfigError(
            f"{field}.clusterUuid",
            'must be a lowercase UUID like "7c1f3a52-9d0e-4b6a-8f21-3e5d9c0b4a17"',
        )
    return code, FabricInfo(
        cluster_uuid=uuid.UUID(cluster),
        clique_id=_integer(data, "cliqueId", f"{field}.cliqueId", UINT32_MAX),
        state=_integer(data, "state", f"{field}.state", 255),
        status=_integer(data, "status", f"{field}.status", UINT32_MAX),
        health_mask=_integer(data, "healthMask", f"{field}.healthMask", UINT32_MAX, default=0),
        health_summary=_integer(data, "healthSummary", f"{field}.healthSummary", 255, default=0),
    )


def _hex32(data: Mapping[str, Any], key: str, field: str) -> int:
    text = _string(data, key, field, 31)
    if not _HEX32.fullmatch(text):
        raise ConfigError(field, f'must be "0x" and 1 to 8 hex digits (got "{text}")')
    return int(text, 16)


def _gpu(value: object, index: int) -> GpuSpec:
    prefix = f"gpus[{index}]"
    data = _object(value, prefix)
    _known(data, prefix, _GPU_KEYS)
    name = _string(data, "name", f"{prefix}.name", NAME_MAX)
    gpu_uuid = _string(data, "uuid", f"{prefix}.uuid", NAME_MAX)
    if not (gpu_uuid.startswith("GPU-") and _UUID.fullmatch(gpu_uuid[4:])):
        reason = f'must be "GPU-" and a lowercase UUID (got "{gpu_uuid}")'
        raise ConfigError(f"{prefix}.uuid", reason)
    bus_id = _string(data, "pciBusId", f"{prefix}.pciBusId", 31)
    if not _BUS_ID.fullmatch(bus_id):
        reason = f'must look like "00000008:01:00.0" (got "{bus_id}")'
        raise ConfigError(f"{prefix}.pciBusId", reason)
    device_id = _hex32(data, "pciDeviceId", f"{prefix}.pciDeviceId")
    subsystem_id = _hex32(data, "pciSubSystemId", f"{prefix}.pciSubSystemId")
    architecture = _integer(data, "architecture", f"{prefix}.architecture", UINT32_MAX)
    field = f"{prefix}.cudaComputeCapability"
    if "cudaComputeCapability" not in data:
        raise ConfigError(field, "is required")
    cc = data["cudaComputeCapability"]
    if not (
        isinstance(cc, list)
        and len(cc) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 1000 for v in cc)
    ):
        raise ConfigError(field, "must be [major, minor], integers from 0 to 1000")
    if "fabric" not in data:
        raise ConfigError(f"{prefix}.fabric", "is required")
    code, info = _fabric(data["fabric"], f"{prefix}.fabric")
    return GpuSpec(
        name=name,
        uuid=gpu_uuid,
        pci_bus_id=bus_id,
        pci_device_id=device_id,
        pci_subsystem_id=subsystem_id,
        architecture=architecture,
        compute_capability=(cc[0], cc[1]),
        fabric_return=code,
        fabric=info,
    )


def _versions(data: Mapping[str, Any]) -> tuple[int, ...]:
    if "fabricInfoVersions" not in data:
        raise ConfigError("fabricInfoVersions", "is required")
    versions = data["fabricInfoVersions"]
    if not isinstance(versions, list):
        raise ConfigError("fabricInfoVersions", "must be an array of 2 and 3")
    seen: list[int] = []
    for i, version in enumerate(versions):
        if type(version) is not int or version not in FABRIC_STRUCT_VERSIONS:
            raise ConfigError("fabricInfoVersions", f"item {i}: must be 2 or 3")
        if version in seen:
            raise ConfigError("fabricInfoVersions", f"item {i}: listed twice")
        seen.append(version)
    return tuple(sorted(seen))


def parse(data: object) -> Document:
    """Validate a decoded document; ConfigError naming the field otherwise."""
    doc = _object(data, "document")
    _known(doc, "document", _DOCUMENT_KEYS)
    description = _string(doc, "description", "description", 4095, required=False)
    init_return = _integer(doc, "initReturn", "initReturn", UINT32_MAX, default=0)
    driver = _string(doc, "driverVersion", "driverVersion", VERSION_MAX)
    nvml = _string(doc, "nvmlVersion", "nvmlVersion", VERSION_MAX)
    cuda = _integer(doc, "cudaDriverVersion", "cudaDriverVersion", 0x7FFFFFFF)
    versions = _versions(doc)
    if "gpus" not in doc:
        raise ConfigError("gpus", "is required")
    items = doc["gpus"]
    if not isinstance(items, list):
        raise ConfigError("gpus", "must be an array")
    if len(items) > MAX_GPUS:
        raise ConfigError("gpus", f"at most {MAX_GPUS} GPUs (got {len(items)})")
    gpus: list[GpuSpec] = []
    for index, item in enumerate(items):
        gpu = _gpu(item, index)
        for j, other in enumerate(gpus):
            if other.uuid == gpu.uuid:
                raise ConfigError(f"gpus[{index}].uuid", f"repeats the UUID of gpus[{j}]")
            if other.pci_bus_id.upper() == gpu.pci_bus_id.upper():
                raise ConfigError(f"gpus[{index}].pciBusId", f"repeats the bus ID of gpus[{j}]")
        gpus.append(gpu)
    return Document(
        driver_version=driver,
        nvml_version=nvml,
        cuda_driver_version=cuda,
        fabric_info_versions=versions,
        gpus=tuple(gpus),
        init_return=init_return,
        description=description,
    )


def decode(data: bytes) -> str:
    """A profile file's text; ConfigError unless it is UTF-8 (as the C reader requires)."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise ConfigError("", "not valid JSON: not UTF-8 text") from None


def loads(text: str) -> Document:
    """Parse a JSON profile document; ConfigError for bad JSON or a bad field."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_members)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise ConfigError("", f"not valid JSON: {where}: {exc.msg}") from None
    except _DuplicateMemberError as exc:
        raise ConfigError("", f"not valid JSON: duplicate member {exc}") from None
    return parse(data)


class _DuplicateMemberError(ValueError):
    pass


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateMemberError(f'"{key}"')
        result[key] = value
    return result


def read(path: Path) -> Document:
    """Read and parse one profile file; ConfigError naming the file."""
    try:
        return loads(decode(path.read_bytes()))
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read: {exc.strerror or exc}") from None
    except ConfigError as exc:
        raise ConfigError(str(path), str(exc)) from None


def to_json(doc: Document) -> dict[str, Any]:
    """The document as JSON values (what :func:`parse` reads back)."""
    gpus = []
    for gpu in doc.gpus:
        fabric: dict[str, Any] = {"return": gpu.fabric_return}
        if gpu.fabric is not None:
            info = gpu.fabric
            fabric = {
                "clusterUuid": str(info.cluster_uuid),
                "cliqueId": info.clique_id,
                "state": info.state,
                "status": info.status,
                "healthMask": info.health_mask,
                "healthSummary": info.health_summary,
            }
        gpus.append(
            {
                "name": gpu.name,
                "uuid": gpu.uuid,
                "pciBusId": gpu.pci_bus_id,
                "pciDeviceId": f"0x{gpu.pci_device_id:08X}",
                "pciSubSystemId": f"0x{gpu.pci_subsystem_id:08X}",
                "architecture": gpu.architecture,
                "cudaComputeCapability": list(gpu.compute_capability),
                "fabric": fabric,
            }
        )
    data: dict[str, Any] = {}
    if doc.description:
        data["description"] = doc.description
    data |= {
        "driverVersion": doc.driver_version,
        "nvmlVersion": doc.nvml_version,
        "cudaDriverVersion": doc.cuda_driver_version,
        "fabricInfoVersions": list(doc.fabric_info_versions),
    }
    if doc.init_return != NVML_SUCCESS:
        data["initReturn"] = doc.init_return
    data["gpus"] = gpus
    return data


def dumps(doc: Document) -> str:
    """The document as the JSON text of a profile file."""
    return json.dumps(to_json(doc), indent=2) + "\n"
