"""Leader election over a Lease on the embedded server: one leader of two, failover when the
leader stops renewing, quick hand-over on release, and stepping down when the lease is taken.

Real time with short durations (lease 3 s, renew deadline 2 s, retry 0.25 s); the assertions
are about who leads and in which order, never about how long anything took.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from computedomain.kube import resources
from computedomain.kube.leaderelection import LeaderElector
from computedomain.kube.rest import Api
from tests.support.polling import eventually

TIMINGS = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.25}


class Candidate:
    """An elector plus a record of its leadership terms."""

    def __init__(self, api: Api, namespace: str, identity: str, **kwargs: Any) -> None:
        self.elector = LeaderElector(
            api, lease_name="lock", namespace=namespace, identity=identity, **TIMINGS, **kwargs
        )
        self.identity = identity
        self.terms: list[str] = []
        self.leading = False
        self.task: asyncio.Task[None] | None = None

    async def lead(self) -> None:
        self.terms.append("started")
        self.leading = True
        try:
            await asyncio.Event().wait()
        finally:
            self.leading = False
            self.terms.append("stopped")

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run(self.lead))

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def holder(api: Api, namespace: str) -> str:
    lease = await api.get(resources.LEASES, "lock", namespace)
    return str(lease["spec"].get("holderIdentity") or "")


async def test_one_leader_then_failover_when_it_stops_renewing(api: Api, namespace: str) -> None:
    a = Candidate(api, namespace, "a", release_on_cancel=False)
    b = Candidate(api, namespace, "b", release_on_cancel=False)
    a.start()
    await eventually(lambda: a.leading, what="a to lead")
    b.start()
    try:
        await eventually(lambda: b.elector.observed_leader == "a", what="b to see a leading")
        assert not b.leading
        assert await holder(api, namespace) == "a"
        await a.stop()  # crash-like: no release, the lease still names a
        assert await holder(api, namespace) == "a"
        await eventually(lambda: b.leading, what="b to take over after the lease expires")
        assert await holder(api, namespace) == "b"
        lease = await api.get(resources.LEASES, "lock", namespace)
        assert lease["spec"]["leaseTransitions"] == 1
        assert a.terms == ["started", "stopped"]
        assert b.terms == ["started"]
    finally:
        await b.stop()


async def test_release_on_exit_hands_over_at_once(api: Api, namespace: str) -> None:
    a = Candidate(api, namespace, "a")
    b = Candidate(api, namespace, "b")
    a.start()
    await eventually(lambda: a.leading, what="a to lead")
    b.start()
    try:
        await eventually(lambda: b.elector.observed_leader == "a", what="b to see a leading")
        await a.stop()
        assert await holder(api, namespace) == ""  # released: holderIdentity cleared
        await eventually(lambda: b.leading, what="b to lead")
        assert not a.elector.is_leader
        assert b.elector.is_leader
    finally:
        await b.stop()
    assert await holder(api, namespace) == ""


async def test_leader_steps_down_when_the_lease_is_taken(api: Api, namespace: str) -> None:
    a = Candidate(api, namespace, "a")
    a.start()
    await eventually(lambda: a.leading, what="a to lead")
    await api.patch(
        resources.LEASES, "lock",
        {"spec": {"holderIdentity": "intruder", "leaseDurationSeconds": 3600}},
        namespace=namespace,
    )  # fmt: skip
    assert a.task is not None
    await asyncio.wait_for(a.task, 10)  # run() returns once renewing fails past the deadline
    assert a.terms == ["started", "stopped"]
    assert await holder(api, namespace) == "intruder"  # never released what it no longer holds


async def test_lead_returning_releases_and_returns(api: Api, namespace: str) -> None:
    elector = LeaderElector(api, lease_name="lock", namespace=namespace, identity="solo", **TIMINGS)
    ran: list[str] = []

    async def lead() -> None:
        ran.append("led")

    await asyncio.wait_for(elector.run(lead), 10)
    assert ran == ["led"]
    assert await holder(api, namespace) == ""
