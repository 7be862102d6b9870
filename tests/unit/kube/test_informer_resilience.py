"""An informer whose API server is unreachable keeps retrying with backoff and never syncs."""

from __future__ import annotations

import asyncio
import contextlib

from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain.kube.informer import Informer
from computedomain.runtime.clock import ManualClock
from tests.support.polling import eventually


async def test_unreachable_server_is_retried_on_the_clock() -> None:
    clock = ManualClock()
    api = await connect(ClientConfig(url="http://127.0.0.1:9", qps=0, timeout_seconds=5))
    informer = Informer(api, resources.PODS, clock=clock)
    task = asyncio.create_task(informer.run())
    try:
        await eventually(lambda: clock.sleepers == 1, what="the first backoff")
        assert api.stats.total(code=0) == 1
        assert not await informer.wait_for_sync(0.01)
        deadline = clock.next_deadline()
        assert deadline is not None
        assert 0.8 <= deadline - clock.monotonic() <= 1.6  # jittered 0.8 s first step
        clock.advance(2.0)
        await eventually(lambda: api.stats.total(code=0) == 2, what="a second attempt")
        assert not task.done()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await api.close()
