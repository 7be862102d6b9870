"""Shared pieces of the fault suites: waiting with deadlines, the cluster the plugin runs in
(an embedded API server with the fault stage, the CRDs, the other parties acting through the
API), and the plugin itself, in-process or as a real ``cd-kubelet-plugin`` process."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest


async def eventually(check: Any, *, within: float = 15.0, what: str = "condition") -> Any:
    """Poll ``check`` (sync or async) until it returns a truthy value; fail at the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            pytest.fail(f"timed out after {within} s waiting for {what}")
        await asyncio.sleep(0.02)
