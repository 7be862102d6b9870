"""The simulated host ``nvidia-imex`` (docs/compatibility.md#host-managed-imex-daemons): the
kubelet plugin's real check, through the ``chroot`` and ``nvidia-imex-ctl`` stand-ins and the
node's control socket, says not ready while the node's marker exists and READY once it goes."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from computedomain.api import imex
from computedomain.kubeletplugin.hostimex import HostImex as Check
from computedomain.kubeletplugin.hostimex import HostImexNotReady
from computedomain_sim.imex import host, wrappers


@pytest.fixture
def root() -> Iterator[Path]:
    # Short: the control socket's path must fit a unix socket address (107 bytes).
    directory = Path(tempfile.mkdtemp(prefix="hi-", dir="/tmp"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


async def test_the_plugin_check_follows_the_marker(root: Path, tmp_path: Path) -> None:
    node = root / "node"
    host.lay_out(node, ready=False)
    daemon = host.HostImex(node)
    await daemon.start()
    chroot = wrappers.ensure(tmp_path / "wrappers") / "chroot"
    check = Check(node, imex.DEFAULT_HOST_SOCKET_PATH, chroot=str(chroot))
    try:
        with pytest.raises(HostImexNotReady) as info:
            await check.check()
        assert str(info.value).startswith("host nvidia-imex daemon not ready: UNAVAILABLE")
        (node / host.NOT_READY_MARKER).unlink()
        await check.check()
        assert daemon.queries == 2
    finally:
        await daemon.stop()
    with pytest.raises(HostImexNotReady, match="error running nvidia-imex-ctl"):
        await check.check()  # no daemon: the tool cannot connect and exits 1


def test_answer(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    assert host.answer(marker) == b"READY\n"
    marker.write_text("held\n")
    assert host.answer(marker) == b"UNAVAILABLE: held\n"
