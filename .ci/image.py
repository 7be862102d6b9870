"""Build the Containerfile with buildah (`make image`) and report the image's size, layers and
build time.

buildah runs as root with the vfs storage driver and chroot isolation, which need neither a
daemon nor kernel overlay support. The Containerfile's base is the python image pinned by
digest; where it is neither in local storage nor pullable (no registry reachable), a stand-in
is built from Debian bookworm's own packages with debootstrap (python3.11 with venv and the CA
certificates, the interpreter linked under /usr/local/bin as in the python image), tagged with
the base's name without the digest and passed as BASE; the final image's base labels then name
the stand-in. The stand-in is kept as an OCI archive under ~/.cache/computedomain, so only the
first build on a machine bootstraps it.

pip inside the build uses the machine's pip configuration: index URLs and trusted hosts as build
arguments of the build stage, the CA bundle as a read-only volume of the RUN steps (never copied
into the image).

No --layers: with vfs every cached step is a full copy of the root filesystem (a build with
them wrote 7 GB and took most of its time copying and deleting those), so each stage is one
working container and the image is the base's layers and one of ours.

Usage: python3 .ci/image.py --tag TAG [--plugins "a b"] [--containerfile F] [--context DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUILDAH = ("buildah", "--storage-driver=vfs")
ISOLATION = "--isolation=chroot"
REPO = Path(__file__).resolve().parents[1]
SUITE = "bookworm"
PACKAGES = ("python3.11", "python3-venv", "ca-certificates")
# The python image's interpreter paths, as links to Debian's.
LINKS = {
    "usr/local/bin/python3.11": "/usr/bin/python3.11",
    "usr/local/bin/python3": "python3.11",
    "usr/local/bin/python": "python3.11",
}
STAND_IN_ENV = (
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG=C.UTF-8",
)
RECIPE_LABEL = "io.computedomain.stand-in-recipe"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# The machine's CA bundle is mounted over the image's own during the RUN steps: a bind mount is
# not committed, and the path exists in both bases, so no trace of it is left in the image.
CA_IN_BUILD = "/etc/ssl/certs/ca-certificates.crt"


def buildah(*args: str, capture: bool = True, check: bool = True) -> str:
    """Run buildah with our storage driver; its stdout (stderr passes through)."""
    out = subprocess.run(
        [*BUILDAH, *args],
        stdout=subprocess.PIPE if capture else None,
        text=True,
        check=check,
    )
    return out.stdout or ""


def image_json(name: str) -> dict[str, object] | None:
    """``buildah inspect`` of a local image, or None when there is none by that name."""
    out = subprocess.run(
        [*BUILDAH, "inspect", "--type", "image", name],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return None
    result: dict[str, object] = json.loads(out.stdout)
    return result


def base_of(containerfile: Path) -> str:
    """The default of ``ARG BASE`` in the Containerfile."""
    found = re.search(r"^ARG BASE=(\S+)$", containerfile.read_text(), re.MULTILINE)
    if found is None:
        sys.exit(f"{containerfile}: no `ARG BASE=...` line")
    return found.group(1)


def pull(name: str) -> bool:
    """Whether ``name`` is in local storage or could be pulled into it."""
    out = subprocess.run(
        [*BUILDAH, "pull", "--policy=missing", "--quiet", "--retry=0", name],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        reason = out.stderr.strip().splitlines()[-1:] or ["no output"]
        print(f"base {name} cannot be pulled: {reason[0]}")
    return out.returncode == 0


def debian_mirror() -> str:
    """The machine's apt mirror for bookworm (deb822 or one-line sources), else Debian's."""
    sources = Path("/etc/apt")
    for path in sorted(sources.glob("sources.list.d/*.sources")):
        for stanza in path.read_text().split("\n\n"):
            fields = dict(
                line.split(":", 1) for line in stanza.splitlines() if re.match(r"^[A-Za-z]+:", line)
            )
            suites = fields.get("Suites", "").split()
            if SUITE in suites and "deb" in fields.get("Types", "").split():
                return fields.get("URIs", DEFAULT_MIRROR).split()[0]
    for path in [sources / "sources.list", *sorted(sources.glob("sources.list.d/*.list"))]:
        if path.is_file():
            for line in path.read_text().splitlines():
                words = [w for w in line.split() if not w.startswith("[")]
                if len(words) >= 3 and words[0] == "deb" and words[2] == SUITE:
                    return words[1]
    return DEFAULT_MIRROR


def recipe_key() -> str:
    """A digest of what the stand-in is made of, naming its cache file and label."""
    text = json.dumps([SUITE, PACKAGES, LINKS, STAND_IN_ENV, EMPTIED], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "computedomain"


# Emptied after the bootstrap, as the slim images do: apt's caches and lists, docs, manuals and
# translations; and the mount points, which the runtime fills.
EMPTIED = (
    "dev", "proc", "sys", "tmp", "var/cache/apt", "var/lib/apt/lists",
    "usr/share/doc", "usr/share/man", "usr/share/locale",
)  # fmt: skip


def bootstrap(name: str, key: str) -> None:
    """Debootstrap the stand-in and commit it to local storage as ``name``."""
    mirror = debian_mirror()
    print(f"building the base stand-in {name} with debootstrap from {mirror}")
    work = Path(tempfile.mkdtemp(prefix="stand-in-", dir=cache_dir()))
    try:
        root = work / "root"
        subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}",
             SUITE, str(root), mirror],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        commit_root(root, name, key)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def commit_root(root: Path, name: str, key: str) -> None:
    """Trim a bootstrapped tree, link the interpreter, and commit it as image ``name``."""
    for empty in EMPTIED:
        for entry in (root / empty).glob("*"):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    for link, target in LINKS.items():
        (root / link).symlink_to(target)
    container = buildah("from", "scratch").strip()
    try:
        mount = Path(buildah("mount", container).strip())
        subprocess.run(["cp", "-a", f"{root}/.", f"{mount}/"], check=True)
        buildah("umount", container)
        config = ["--cmd", "python3", "--label", f"{RECIPE_LABEL}={key}"]
        for env in STAND_IN_ENV:
            config += ["--env", env]
        buildah("config", *config, container)
        buildah("commit", "--quiet", container, name)
    finally:
        buildah("rm", container, check=False)


def stand_in(base: str) -> str:
    """The local stand-in for ``base`` (present, restored from the cache, or bootstrapped)."""
    name = base.split("@", 1)[0]
    key = recipe_key()
    found = image_json(name)
    if found is not None and _labels(found).get(RECIPE_LABEL) == key:
        print(f"base stand-in {name} is in local storage")
        return name
    archive = cache_dir() / f"python3.11-{SUITE}-{key}.oci.tar"
    if archive.is_file():
        print(f"base stand-in {name} from {archive}")
        image_id = buildah("pull", "--quiet", f"oci-archive:{archive}").strip()
        buildah("tag", image_id, name)
        return name
    archive.parent.mkdir(parents=True, exist_ok=True)
    bootstrap(name, key)
    partial = archive.with_suffix(".partial")
    buildah("push", "--quiet", "--disable-compression", name, f"oci-archive:{partial}")
    partial.replace(archive)
    return name


def _labels(inspected: dict[str, object]) -> dict[str, str]:
    oci = inspected.get("OCIv1")
    config = oci.get("config") if isinstance(oci, dict) else None
    labels = config.get("Labels") if isinstance(config, dict) else None
    return dict(labels) if isinstance(labels, dict) else {}


def pip_settings() -> dict[str, str]:
    """The machine's pip configuration that the build stage needs: key -> value."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        check=False,
    )
    found: dict[str, str] = {}
    for line in out.stdout.splitlines():
        key, _, value = line.partition("=")
        option = key.rsplit(".", 1)[-1]
        if option in {"index-url", "extra-index-url", "trusted-host", "cert"}:
            found[option] = value.strip().strip("'\"")
    for option in ("index-url", "extra-index-url", "trusted-host", "cert"):
        env = os.environ.get("PIP_" + option.upper().replace("-", "_"))
        if env:
            found[option] = env
    return found


def build_arguments(pip: dict[str, str]) -> list[str]:
    """``buildah bud`` arguments handing pip's configuration to the build stage."""
    args: list[str] = []
    for option in ("index-url", "extra-index-url", "trusted-host"):
        if option in pip:
            args += ["--build-arg", f"PIP_{option.upper().replace('-', '_')}={pip[option]}"]
    cert = pip.get("cert")
    if cert and Path(cert).is_file():
        args += ["--volume", f"{Path(cert).resolve()}:{CA_IN_BUILD}:ro"]
        args += ["--build-arg", f"PIP_CERT={CA_IN_BUILD}"]
    return args


def drop_replaced(previous: dict[str, object] | None) -> None:
    """Remove the image the new build took the tag from, once nothing names it (each is a full
    copy of the image under vfs)."""
    if previous is None:
        return
    image_id = str(previous["FromImageID"])
    listed = json.loads(buildah("images", "--json", "--all"))
    if any(image_id.startswith(i["id"]) and not i.get("names") for i in listed):
        buildah("rmi", image_id, check=False)


def report(tag: str, seconds: float, base_note: str) -> dict[str, object]:
    """Size (bytes), layer count and build seconds of the built image."""
    inspected = image_json(tag)
    assert inspected is not None, tag
    oci = inspected["OCIv1"]
    assert isinstance(oci, dict)
    layers = len(oci["rootfs"]["diff_ids"])
    manifest = json.loads(str(inspected["Manifest"]))
    size = sum(int(layer["size"]) for layer in manifest["layers"])  # stored uncompressed
    return {
        "image": tag,
        "size_bytes": size,
        "size_mb": round(size / 1e6, 1),
        "layers": layers,
        "build_seconds": round(seconds, 1),
        "base": base_note,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", required=True)
    parser.add_argument("--plugins", default="", help="plugin folder names under plugins/")
    parser.add_argument("--containerfile", type=Path, default=REPO / "Containerfile")
    parser.add_argument("--context", type=Path, default=REPO)
    parser.add_argument("--report", type=Path, help="also write the report here (JSON)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("error: buildah builds here as root (vfs storage, chroot isolation)", file=sys.stderr)
        return 1
    started = time.monotonic()
    base = base_of(args.containerfile)
    bud = ["bud", ISOLATION, "--file", str(args.containerfile), "--tag", args.tag]
    bud += ["--build-arg", f"PLUGINS={args.plugins}"]
    if pull(base):
        base_note = base
    else:
        local = stand_in(base)
        digest = str((image_json(local) or {}).get("FromImageDigest", ""))
        base_note = f"{local} (stand-in built from Debian's packages, {digest})"
        bud += ["--pull=never", "--build-arg", f"BASE={local}"]
        bud += ["--label", f"org.opencontainers.image.base.name={local}"]
        bud += ["--label", f"org.opencontainers.image.base.digest={digest}"]
    bud += build_arguments(pip_settings())
    previous = image_json(args.tag)
    buildah(*bud, str(args.context), capture=False)
    drop_replaced(previous)
    result = report(args.tag, time.monotonic() - started, base_note)
    print(
        f"image {result['image']}: {result['size_mb']} MB, {result['layers']} layers, "
        f"built in {result['build_seconds']} s; base {result['base']}"
    )
    if args.report:
        args.report.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
