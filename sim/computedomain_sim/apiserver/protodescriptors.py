"""The protobuf descriptors of every built-in Kubernetes kind, compiled at build time from the
``generated.proto`` files of the ``k8s.io/api`` and ``k8s.io/apimachinery`` Go modules.

``make`` runs ``python -m computedomain_sim.apiserver.protodescriptors``: it fetches the two
modules at :data:`API_VERSION` through the Go module proxy (``go mod download``), compiles their
``.proto`` files with grpcio-tools' protoc into one ``FileDescriptorSet`` and writes it into the
virtual environment. Nothing generated is kept in the repository. :func:`load` reads it for
:mod:`.protobuf`.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from google.protobuf import descriptor_pb2, descriptor_pool

API_VERSION: Final = "v0.37.2"  # the Kubernetes 1.37.2 API, as the real control plane's
GNOSTIC_VERSION: Final = "v0.7.0"  # the gnostic-models of Kubernetes 1.37.2's go.mod
MODULES: Final = {
    "k8s.io/api": API_VERSION,
    "k8s.io/apimachinery": API_VERSION,
    "github.com/google/gnostic-models": GNOSTIC_VERSION,
}
# Compiled besides every module's generated.proto.
EXTRA_PROTOS: Final = ("github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto",)
DEFAULT_PATH: Final = Path(sys.prefix) / "share" / "computedomain-sim" / "k8s-api.pb"
ENV_PATH: Final = "COMPUTEDOMAIN_SIM_PROTO_DESCRIPTORS"


class DescriptorsMissing(RuntimeError):
    pass


def path() -> Path:
    """Where the descriptor set is (``$COMPUTEDOMAIN_SIM_PROTO_DESCRIPTORS`` overrides)."""
    return Path(os.environ.get(ENV_PATH) or DEFAULT_PATH)


def _module_dirs() -> dict[str, Path]:
    """The downloaded modules' folders, by module path."""
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "GOFLAGS": "-mod=mod", "GO111MODULE": "on"}
        result = subprocess.run(
            ["go", "mod", "download", "-json", *(f"{m}@{v}" for m, v in MODULES.items())],
            cwd=scratch,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    if result.returncode != 0:
        msg = f"go mod download failed: {result.stderr.strip() or result.stdout.strip()}"
        raise RuntimeError(msg)
    decoder = json.JSONDecoder()
    text, pos, dirs = result.stdout, 0, {}
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        info, pos = decoder.raw_decode(text, pos)
        if info.get("Error"):
            msg = f"go mod download {info.get('Path')}: {info['Error']}"
            raise RuntimeError(msg)
        dirs[info["Path"]] = Path(info["Dir"])
    return dirs


def build(out: Path) -> None:
    """Compile every ``generated.proto`` of the pinned modules and :data:`EXTRA_PROTOS` into
    ``out`` (atomically)."""
    import grpc_tools  # noqa: PLC0415 - a build-time tool, not needed to serve

    out = out.resolve()
    dirs = _module_dirs()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for module, folder in dirs.items():
            link = root / module
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(folder)
        protos = sorted(
            str(p.relative_to(root)) for m in dirs for p in (root / m).rglob("generated.proto")
        )
        protos += EXTRA_PROTOS
        include = Path(grpc_tools.__file__).parent / "_proto"
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        result = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{root}", f"-I{include}",
             "--include_imports", f"--descriptor_set_out={tmp}", *protos],
            cwd=root, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            msg = f"protoc failed: {result.stderr.strip()}"
            raise RuntimeError(msg)
        tmp.replace(out)


@functools.cache
def load() -> descriptor_pool.DescriptorPool:
    """A pool holding every built-in kind's messages. Raises :class:`DescriptorsMissing`."""
    source = path()
    try:
        data = source.read_bytes()
    except OSError as exc:
        msg = f"the Kubernetes protobuf descriptors are not built ({source}): run make"
        raise DescriptorsMissing(msg) from exc
    files = descriptor_pb2.FileDescriptorSet.FromString(data)
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return pool


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m computedomain_sim.apiserver.protodescriptors", description=__doc__
    )
    parser.add_argument("--out", type=Path, default=path(), help="where to write the set")
    args = parser.parse_args(argv)
    build(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
