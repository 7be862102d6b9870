"""The built image, for the image tests: `make test-image` builds it (`make image`) and names it
in COMPUTEDOMAIN_IMAGE, with the plugins it was built with in COMPUTEDOMAIN_IMAGE_PLUGINS.

buildah runs as root with the storage driver and isolation `make image` builds with (vfs,
chroot). One working container of the image serves the tests that only run commands in it;
the controller test runs its own. These tests are outside `make test` (pyproject's
norecursedirs): they need root and buildah.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from tests.unit.packaging import project

BUILDAH = ("buildah", "--storage-driver=vfs")
ISOLATION = "--isolation=chroot"


@attrs.frozen
class Image:
    """The image under test: its name, the plugins it was built with, its inspected config."""

    name: str
    plugins: tuple[str, ...]
    inspected: dict[str, Any]

    @property
    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = self.inspected["OCIv1"]["config"]
        return config


def buildah(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``buildah <args>`` with our storage driver; never raises on a non-zero exit."""
    return subprocess.run(
        [*BUILDAH, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="session")
def image() -> Image:
    name = os.environ.get("COMPUTEDOMAIN_IMAGE", f"localhost/computedomain:{project.version()}")
    plugins = tuple(os.environ.get("COMPUTEDOMAIN_IMAGE_PLUGINS", "").split())
    inspected = buildah("inspect", "--type", "image", name)
    if inspected.returncode != 0:
        pytest.fail(f"no image {name}: build it with `make image` ({inspected.stderr.strip()})")
    return Image(name, plugins, json.loads(inspected.stdout))


@pytest.fixture(scope="session")
def container(image: Image) -> Iterator[str]:
    """A working container of the image (removed after the session)."""
    made = buildah("from", "--pull=never", image.name, timeout=300)
    assert made.returncode == 0, made.stderr
    name = made.stdout.strip()
    try:
        yield name
    finally:
        buildah("rm", name)


def run_in(
    container: str, *command: str, options: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``buildah run`` of ``command`` in ``container`` as the image's user."""
    return buildah("run", ISOLATION, *options, container, "--", *command)
