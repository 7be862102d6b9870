"""Loopback addresses for simulated nodes and pods, unique on this machine.

Called by :mod:`computedomain_sim.cluster` (one :class:`AddressBlock` per cluster, shared by its
kubelets). All of 127.0.0.0/8 reaches the loopback interface on Linux, so each pod can have its
own address and bind its ports there. A cluster takes a whole ``127.<b>.0.0/16`` block and holds
an exclusive ``flock`` on ``<lock_dir>/127.<b>.lock`` for its lifetime, so two clusters (two test
workers, or a test beside ``sim up``) never hand out the same address. Node addresses are
``127.<b>.0.<n>`` (n <= 253), the control plane's (a real one's programs) ``127.<b>.0.254``; pod
addresses are ``127.<b>.<x>.<y>`` with x >= 1, handed out round-robin so an
address is not reused soon after its pod went away.
"""

from __future__ import annotations

import fcntl
import os
import random
from pathlib import Path
from typing import IO

__all__ = ["AddressBlock", "AddressExhausted"]

DEFAULT_LOCK_DIR = Path("/tmp/cd-sim-address-blocks")
_FIRST_BLOCK, _LAST_BLOCK = 16, 254
_NODE_MAX = 253
_POD_SLOTS = 254 * 254


class AddressExhausted(RuntimeError):
    """No free block on this machine, or no free pod address in the block."""


class AddressBlock:
    """A ``127.<b>.0.0/16`` block owned by this process until :meth:`release`."""

    def __init__(self, block: int, lock: IO[bytes]) -> None:
        self.block = block
        self._lock = lock
        self._in_use: set[str] = set()
        self._next = 0

    @classmethod
    def acquire(cls, lock_dir: Path = DEFAULT_LOCK_DIR) -> AddressBlock:
        """Lock a free block (tried in random order). Raises :class:`AddressExhausted`."""
        lock_dir.mkdir(parents=True, exist_ok=True)
        candidates = list(range(_FIRST_BLOCK, _LAST_BLOCK + 1))
        random.shuffle(candidates)
        for block in candidates:
            handle = (lock_dir / f"127.{block}.lock").open("ab")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            handle.write(f"{os.getpid()}\n".encode())
            handle.flush()
            return cls(block, handle)
        msg = f"every 127.x.0.0/16 block in {lock_dir} is taken by another simulated cluster"
        raise AddressExhausted(msg)

    def node_address(self, index: int) -> str:
        """The address of node number ``index`` (0-based). Pure."""
        if not 0 <= index < _NODE_MAX:
            msg = f"node index {index} out of range (at most {_NODE_MAX} nodes)"
            raise AddressExhausted(msg)
        return f"127.{self.block}.0.{index + 1}"

    def control_plane_address(self) -> str:
        """The address the control plane's programs listen on (a real control plane). Pure."""
        return f"127.{self.block}.0.{_NODE_MAX + 1}"

    def pod_address(self) -> str:
        """A pod address not in use, round-robin. Raises :class:`AddressExhausted`."""
        for _ in range(_POD_SLOTS):
            slot = self._next
            self._next = (self._next + 1) % _POD_SLOTS
            address = f"127.{self.block}.{slot // 254 + 1}.{slot % 254 + 1}"
            if address not in self._in_use:
                self._in_use.add(address)
                return address
        msg = f"all {_POD_SLOTS} pod addresses of 127.{self.block}.0.0/16 are in use"
        raise AddressExhausted(msg)

    def release_pod_address(self, address: str) -> None:
        """Give ``address`` back (idempotent)."""
        self._in_use.discard(address)

    def release(self) -> None:
        """Unlock the block (idempotent)."""
        if not self._lock.closed:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
