"""Keeping a cancellation that an error raised while handling it would hide.

Loops that must survive a bad step (cleanup, slice publishing, work queues) catch ``Exception``.
When a ``finally`` or ``__aexit__`` raises while a ``CancelledError`` unwinds through the step,
the new error replaces the cancellation, the loop catches it as an ordinary failure, and the
task carries on: the cancellation is not delivered again, so a shutdown that awaits the task
waits forever. :func:`raise_if_cancelling` in such a handler restores it: the task still has a
cancellation request outstanding (``Task.cancelling()``), so it stops as asked.
"""

from __future__ import annotations

import asyncio


def raise_if_cancelling() -> None:
    """Raise ``CancelledError`` when the current task has been asked to cancel."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
