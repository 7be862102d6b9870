"""Asking the host's nvidia-imex (docs/compatibility.md#host-managed-imex-daemons): where the
tool is looked for, the command, upstream's messages, and real processes through a chroot
stand-in (a real chroot needs root and a whole file system)."""

from __future__ import annotations

from pathlib import Path

import pytest

from computedomain.kubeletplugin import hostimex
from computedomain.kubeletplugin.hostimex import HostImex, HostImexNotReady

SOCKET = "/etc/nvidia-imex/imex_ctrl.sock"
# chroot ROOT TOOL ARGS...: run ROOT/TOOL with ARGS (what a chroot does, for these tools).
FAKE_CHROOT = '#!/bin/sh\nroot=$1; tool=$2; shift 2\nexec "$root$tool" "$@"\n'


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _root(tmp_path: Path, tool: str | None, where: str = "usr/bin") -> Path:
    root = tmp_path / "driver-root"
    (root / "dev").mkdir(parents=True)
    if tool is not None:
        _executable(root / where / "nvidia-imex-ctl", tool)
    return root


def _host(tmp_path: Path, root: Path, timeout: float = 10.0) -> HostImex:
    chroot = _executable(tmp_path / "chroot", FAKE_CHROOT)
    return HostImex(root, SOCKET, timeout=timeout, chroot=str(chroot))


@pytest.mark.parametrize("where", ["opt/bin", "usr/sbin", "sbin", "."], ids=str)
def test_locate_searches_upstreams_dirs(tmp_path: Path, where: str) -> None:
    root = _root(tmp_path, "#!/bin/sh\n", where)
    assert hostimex.locate(root) == "/" + str(Path(where) / "nvidia-imex-ctl").lstrip("./")


def test_locate_follows_symlinks_and_wants_a_file(tmp_path: Path) -> None:
    root = _root(tmp_path, None)
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/nvidia-imex-ctl").mkdir()  # a directory does not count
    target = _executable(tmp_path / "real-ctl", "#!/bin/sh\n")
    (root / "bin").mkdir()
    (root / "bin/nvidia-imex-ctl").symlink_to(target)
    assert hostimex.locate(root) == "/bin/nvidia-imex-ctl"


def test_missing_tool_is_retryable_with_upstreams_words(tmp_path: Path) -> None:
    root = _root(tmp_path, None)
    with pytest.raises(HostImexNotReady) as info:
        hostimex.locate(root)
    assert str(info.value).startswith(f'nvidia-imex-ctl not found under driver root "{root}": ')
    assert str(info.value).endswith("(is nvidia-imex installed on this node?)")


def test_command_chroots_unless_the_root_is_slash() -> None:
    assert hostimex.command(Path("/driver-root"), "/usr/bin/nvidia-imex-ctl", SOCKET) == [
        "chroot", "/driver-root", "/usr/bin/nvidia-imex-ctl", "-q", f"--u={SOCKET}",
    ]  # fmt: skip
    assert hostimex.command(Path("/"), "/usr/bin/nvidia-imex-ctl", SOCKET) == [
        "/usr/bin/nvidia-imex-ctl", "-q", f"--u={SOCKET}",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("code", "output", "message"),
    [
        (0, "READY\n", None),
        (0, "IMEX daemon status: READY (3 nodes)\n", None),  # anywhere, as upstream
        (0, "UNAVAILABLE\n", "host nvidia-imex daemon not ready: UNAVAILABLE"),
        (0, "NOT_READY\n", "host nvidia-imex daemon not ready: NOT_READY"),
        (
            1,
            "connect failed\n",
            f'error running nvidia-imex-ctl (socket "{SOCKET}"): exit status 1, '
            "output: connect failed",
        ),
    ],
    ids=["ready", "ready-in-a-sentence", "unavailable", "not-ready-is-not-ready", "failed"],
)
def test_verdict(code: int, output: str, message: str | None) -> None:
    if message is None:
        hostimex.verdict(code, output, SOCKET)
        return
    with pytest.raises(HostImexNotReady) as info:
        hostimex.verdict(code, output, SOCKET)
    assert str(info.value) == message


async def test_check_runs_the_hosts_tool_with_the_socket(tmp_path: Path) -> None:
    record = tmp_path / "argv"
    tool = f'#!/bin/sh\necho "$@" > {record}\necho READY\n'
    host = _host(tmp_path, _root(tmp_path, tool))
    await host.check()
    assert record.read_text().split() == ["-q", f"--u={SOCKET}"]


async def test_check_reports_a_daemon_that_is_not_ready(tmp_path: Path) -> None:
    host = _host(tmp_path, _root(tmp_path, "#!/bin/sh\necho UNAVAILABLE\n"))
    with pytest.raises(HostImexNotReady, match=r"^host nvidia-imex daemon not ready: UNAVAILABLE$"):
        await host.check()


async def test_check_gives_up_on_a_tool_that_hangs(tmp_path: Path) -> None:
    host = _host(tmp_path, _root(tmp_path, "#!/bin/sh\nexec sleep 30\n"), timeout=0.3)
    with pytest.raises(HostImexNotReady, match=r"no answer within 0\.3s"):
        await host.check()
