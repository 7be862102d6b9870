"""Watch faults on a running embedded API server: dropped streams and expired windows.

Used by :class:`computedomain_sim.faults.apiserver.ApiFaults` (for decisions and for the
runtime controls :meth:`~computedomain_sim.faults.apiserver.ApiFaults.drop_watches` and
:meth:`~computedomain_sim.faults.apiserver.ApiFaults.expire_watches`). Two faults, each as a
real kube-apiserver shows it to clients:

- **drop**: the TCP connection of one watch is closed in the middle of its chunked stream (a
  load balancer or apiserver restart); the client sees a truncated body and must re-watch from
  its last resourceVersion.
- **expire**: the event window of one resource is cut to the current resourceVersion and every
  watch of it ends with an in-stream ``ERROR`` event carrying a 410 ``Expired`` Status (what
  the watch cache does when it is re-initialised); a client resuming from an older
  resourceVersion gets 410 too, so it must relist. This goes through the documented seam of
  the server, :meth:`computedomain_sim.apiserver.watch.WatchHub.close_all`.
"""

from __future__ import annotations

import asyncio

import attrs

from computedomain_sim.apiserver import status
from computedomain_sim.apiserver.state import ApiState
from computedomain_sim.apiserver.store import StorageKey, TooOldError
from computedomain_sim.apiserver.watch import error_line


@attrs.define(eq=False)
class LiveWatch:
    """A watch request being served: its connection and what it watches."""

    transport: asyncio.BaseTransport
    skey: StorageKey | None
    resource: str
    dropped: bool = False


def drop(watch: LiveWatch) -> bool:
    """Close the watch's connection mid-stream; False if it was already closing. Idempotent."""
    transport = watch.transport
    if transport.is_closing():
        return False
    watch.dropped = True
    transport.close()
    return True


def expire(state: ApiState, skey: StorageKey) -> None:
    """Cut ``skey``'s event window to now and end its watches with a 410 ERROR event."""
    bucket = state.store.bucket(skey)
    before = bucket.window_start
    bucket.events.clear()
    bucket.window_start = state.store.rv
    gone = status.gone(str(TooOldError(before, state.store.rv + 1)))
    state.hub.close_all(skey, final=error_line(gone.to_status()))
