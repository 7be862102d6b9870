"""The base CDI spec ``k8s.compute-domain.nvidia.com/device=all`` (docs/compatibility.md#cdi).

Daemon claims reference it to get the NVIDIA "management" view of the node: every NVIDIA device
node, the driver libraries and the ``nvidia-imex``/``nvidia-imex-ctl`` binaries. Where the
NVIDIA container toolkit is installed, ``nvidia-ctk cdi generate --mode=management`` produces
it, and the root transform then rewrites paths under the container driver root to the host
driver root (the kubelet's runtime resolves host paths). Without the toolkit (the fake NVML
backend: tests, the simulation), the spec is built from the fake profile: the control, UVM and
per-GPU device nodes. Either way ``NVIDIA_VISIBLE_DEVICES=void`` is set once, the spec is
validated, and ``cdiVersion`` is the minimum its content needs.

Pure functions build and transform specs; :func:`generate_with_toolkit` runs the tool.
"""

from __future__ import annotations

import copy
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from computedomain.api import names
from computedomain.api.errors import PermanentError
from computedomain.kubeletplugin import cdi

VISIBLE_DEVICES_VOID: Final = f"{names.ENV_NVIDIA_VISIBLE_DEVICES}=void"
NVIDIA_FRONTEND_MAJOR: Final = 195  # fixed by the driver
CONTROL_MINOR: Final = 255
TOOLKIT_TIMEOUT: Final = 120.0


class BaseSpecError(PermanentError):
    """The base spec cannot be produced (fatal at startup, like upstream)."""


def fake_spec(gpu_count: int, *, uvm_major: int) -> dict[str, Any]:
    """The base spec of a fake node with ``gpu_count`` GPUs. Pure."""
    nodes = [
        cdi.DeviceNode("/dev/nvidiactl", NVIDIA_FRONTEND_MAJOR, CONTROL_MINOR),
        cdi.DeviceNode("/dev/nvidia-uvm", uvm_major, 0),
        cdi.DeviceNode("/dev/nvidia-uvm-tools", uvm_major, 1),
    ]
    nodes += [cdi.DeviceNode(f"/dev/nvidia{i}", NVIDIA_FRONTEND_MAJOR, i) for i in range(gpu_count)]
    spec: dict[str, Any] = {
        "cdiVersion": "",
        "kind": names.cdi_kind(names.CDI_CLASS_DEVICE),
        "devices": [
            {
                "name": names.CDI_BASE_DEVICE,
                "containerEdits": cdi.simplify(
                    cdi.ContainerEdits(device_nodes=tuple(nodes))
                ).to_wire(),
            }
        ],
        "containerEdits": {"env": [VISIBLE_DEVICES_VOID]},
    }
    return finish(spec)


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return root in ("/", path) or path.startswith(root + "/")


def _move(path: str, from_root: str, to_root: str) -> str:
    if not _under(path, from_root):
        return path
    rest = path[len(from_root.rstrip("/")) :] if from_root.rstrip("/") else path
    target = to_root.rstrip("/")
    return (target + rest) or "/"


def root_transform(spec: Mapping[str, Any], from_root: str, to_root: str) -> dict[str, Any]:
    """Rewrite host paths under ``from_root`` to ``to_root`` (relative to the host). Pure.

    Device nodes get an explicit ``hostPath`` (their path when none is given); mounts' host
    paths, hook paths and hook arguments (both sides of ``a::b``) are moved. A no-op when the
    two roots are equal.
    """
    out: dict[str, Any] = copy.deepcopy(dict(spec))
    if from_root.rstrip("/") == to_root.rstrip("/"):
        return out
    edit_sets = [out.get("containerEdits")] + [d.get("containerEdits") for d in out["devices"]]
    for edits in edit_sets:
        if not edits:
            continue
        for node in edits.get("deviceNodes") or ():
            node["hostPath"] = _move(node.get("hostPath") or node["path"], from_root, to_root)
        for mount in edits.get("mounts") or ():
            mount["hostPath"] = _move(mount["hostPath"], from_root, to_root)
        for hook in edits.get("hooks") or ():
            hook["path"] = _move(hook["path"], from_root, to_root)
            hook["args"] = [
                "::".join(_move(part, from_root, to_root) for part in arg.split("::"))
                for arg in hook.get("args") or ()
            ]
    return out


def finish(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Ensure ``NVIDIA_VISIBLE_DEVICES=void`` once, set the minimum version, validate. Pure."""
    out: dict[str, Any] = copy.deepcopy(dict(spec))
    edits = out.setdefault("containerEdits", {})
    env = [e for e in edits.get("env") or () if e != VISIBLE_DEVICES_VOID]
    edits["env"] = [*env, VISIBLE_DEVICES_VOID]
    devices = out.get("devices") or []
    if not any(d.get("containerEdits", {}).get("deviceNodes") for d in devices) and not edits.get(
        "deviceNodes"
    ):
        msg = "the base CDI spec has no NVIDIA device nodes"
        raise BaseSpecError(msg)
    out["cdiVersion"] = cdi.minimum_version(out)
    try:
        cdi.validate(out)
    except cdi.CdiError as exc:
        msg = f"the base CDI spec is invalid: {exc}"
        raise BaseSpecError(msg) from exc
    return out


def dev_root(container_driver_root: Path) -> Path:
    """The container driver root if it has a ``dev`` directory, else ``/`` (upstream's rule)."""
    return container_driver_root if (container_driver_root / "dev").is_dir() else Path("/")


def generate_with_toolkit(
    nvidia_ctk: str, *, container_driver_root: Path, host_driver_root: Path, hook_path: str
) -> dict[str, Any]:
    """Run ``nvidia-ctk cdi generate --mode=management`` and transform roots. Blocking.

    Raises BaseSpecError when the tool fails or prints something that is not a spec.
    """
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "base.yaml"
        argv = [
            nvidia_ctk,
            "cdi",
            "generate",
            "--mode=management",
            f"--vendor={names.CDI_VENDOR}",
            f"--class={names.CDI_CLASS_DEVICE}",
            f"--driver-root={container_driver_root}",
            f"--dev-root={dev_root(container_driver_root)}",
            f"--nvidia-cdi-hook-path={hook_path}",
            "--format=yaml",
            f"--output={output}",
        ]
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=TOOLKIT_TIMEOUT, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            msg = f"running {nvidia_ctk}: {exc}"
            raise BaseSpecError(msg) from exc
        if done.returncode != 0:
            msg = f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.strip()[-500:]}"
            raise BaseSpecError(msg)
        try:
            spec = yaml.safe_load(output.read_text())
        except (OSError, yaml.YAMLError) as exc:
            msg = f"reading the spec {nvidia_ctk} wrote: {exc}"
            raise BaseSpecError(msg) from exc
    if not isinstance(spec, dict) or not spec.get("devices"):
        msg = f"{nvidia_ctk} produced no devices"
        raise BaseSpecError(msg)
    spec["kind"] = names.cdi_kind(names.CDI_CLASS_DEVICE)
    transformed = root_transform(spec, str(container_driver_root), str(host_driver_root))
    return finish(transformed)
