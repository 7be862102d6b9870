"""The kubelet's part in the fault runs: random prepare/unprepare traffic over gRPC, a model of
what each claim's state is known to be, quiescence, and the invariants checked after it.

A run (seeded :class:`random.Random`) issues steps: prepare or unprepare a batch of claims
with a short gRPC deadline, a *race* (a prepare left waiting, then an unprepare of the same
claim: the prepare must never resurrect it, upstream #1162), or a write of another party to
the Node. After each step the outcome the plugin reported is checked against the node at once
(a claim reported unprepared has no CDI spec and no checkpoint entry but, at most, the
``PrepareAborted`` tombstone, which holds no device; a claim reported
prepared has both). After the run the faults are switched off and every claim is driven to a
final state; then :func:`check_node` checks everything at rest.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from computedomain.api import names
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain.kubeletplugin import checkpoint as cp
from computedomain.proto import dra, kubelet_client
from tests.faults import harness
from tests.integration.kubeletplugin.conftest import ref
from tests.support.polling import holds_within

Client = Callable[[], Awaitable[kubelet_client.DraClient]]


@attrs.define
class Claim:
    obj: dict[str, Any]
    kind: str  # "channel" or "daemon"
    domain: str  # the domain's UID
    ready: bool  # whether its domain's daemon is Ready on the node

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"]["uid"])

    @property
    def ref(self) -> dra.ClaimRef:
        return ref(self.obj)


@attrs.define
class Run:
    """One node's run: the node's directory, its claims and what the kubelet knows."""

    root: Path
    claims: list[Claim]
    api: Api  # the world's (no faults)
    node: str
    rng: random.Random
    client: Client  # a fresh kubelet connection (the plugin may have restarted)
    known: dict[str, str] = attrs.field(factory=dict)  # uid -> prepared|unprepared|unknown
    counter: str | None = None  # the last value another party wrote to the Node
    steps: list[str] = attrs.field(factory=list)
    rpc_failures: int = 0
    races: int = 0  # races that happened (the prepare was seen in flight)

    # -- steps --------------------------------------------------------------------------------

    async def _call(self, method: str, claims: Sequence[Claim], deadline: float) -> Any:
        try:
            async with await self.client() as kubelet:
                if method == "prepare":
                    return await kubelet.prepare([c.ref for c in claims], deadline=deadline)
                return await kubelet.unprepare([c.ref for c in claims], deadline=deadline)
        except (kubelet_client.KubeletRpcError, OSError):
            self.rpc_failures += 1  # the plugin was restarting: the kubelet retries later
            return None

    def _check_prepared(self, claim: Claim, result: dra.PrepareResult) -> None:
        traces = harness.injected(self.root, claim.uid)
        assert "CDI spec file" in traces, (claim.uid, "reported prepared", traces)
        entry = harness.read_checkpoint(self.root).claims[claim.uid]
        assert entry.state is cp.ClaimState.PREPARE_COMPLETED
        assert {d.device_name for d in result.devices} == {d.device for d in entry.devices}

    def _check_unprepared(self, claim: Claim) -> None:
        traces = harness.injected(self.root, claim.uid)
        assert not traces, (claim.uid, "reported unprepared but still has", traces)

    async def prepare(self, claims: Sequence[Claim], deadline: float) -> None:
        results = await self._call("prepare", claims, deadline)
        for claim in claims:
            result = None if results is None else results.get(claim.uid)
            if result is not None and not result.error:
                self.known[claim.uid] = "prepared"
                self._check_prepared(claim, result)
            elif self.known.get(claim.uid) != "prepared":
                self.known[claim.uid] = "unknown"

    async def unprepare(self, claims: Sequence[Claim], deadline: float) -> None:
        errors = await self._call("unprepare", claims, deadline)
        for claim in claims:
            if errors is not None and errors.get(claim.uid) == "":
                self.known[claim.uid] = "unprepared"
                self._check_unprepared(claim)
            else:
                self.known[claim.uid] = "unknown"

    async def race(self, claim: Claim) -> bool:
        """A prepare that waits (its domain is not ready), unprepared meanwhile: it must fail
        and leave nothing. False when the prepare was not seen in flight (no race then)."""
        # Start from no entry, so that the entry seen below is this request's, not a leftover
        # of an earlier step's (an unprepare would remove that one, and this prepare, arriving
        # after it, would rightly prepare the claim again).
        before = await self._call("unprepare", [claim], 3.0)
        if before is None or before.get(claim.uid) != "" or harness.injected(self.root, claim.uid):
            self.known[claim.uid] = "unknown"
            return False
        sent = time.time()
        pending = asyncio.create_task(self._call("prepare", [claim], 3.0))

        def started() -> bool:
            entry = harness.read_checkpoint(self.root).claims.get(claim.uid)
            fresh = entry is not None and not entry.completed and entry.at >= sent
            return pending.done() or fresh

        in_flight = await holds_within(started, 1.5) and not pending.done()
        unprepared = False
        if in_flight:
            # Retried as the kubelet retries; under process or disk faults it may not get
            # through in time, and then there was no race to check.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10.0
            while not unprepared and loop.time() < deadline:
                errors = await self._call("unprepare", [claim], 3.0)
                unprepared = errors is not None and errors.get(claim.uid) == ""
                if not unprepared:
                    await asyncio.sleep(0.1)
        results = await pending
        if not unprepared:
            self.known[claim.uid] = "unknown"
            return False
        result = None if results is None else results.get(claim.uid)
        assert result is None or result.error, "a prepare resurrected an unprepared claim"
        self.known[claim.uid] = "unprepared"
        self._check_unprepared(claim)
        self.races += 1
        return True

    async def other_writer(self) -> None:
        self.counter = await harness.bump_node_annotation(self.api, self.node)

    async def step(self) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.35:
            batch = rng.sample(self.claims, rng.randint(1, 3))
            self.steps.append("prepare " + " ".join(c.uid[:4] for c in batch))
            await self.prepare(batch, rng.uniform(1.3, 2.5))
        elif roll < 0.65:
            batch = rng.sample(self.claims, rng.randint(1, 3))
            self.steps.append("unprepare " + " ".join(c.uid[:4] for c in batch))
            await self.unprepare(batch, 3.0)
        elif roll < 0.8:
            # The node's one channel device must be free for the waiting prepare to start.
            claim = rng.choice([c for c in self.claims if not c.ready])
            others = [c for c in self.claims if c.kind == "channel" and c is not claim]
            self.steps.append(f"race {claim.uid[:4]}")
            await self.unprepare(others, 3.0)
            await self.race(claim)
        else:
            self.steps.append("other writer")
            await self.other_writer()

    # -- quiescence ---------------------------------------------------------------------------

    async def settle(self, desired: Sequence[Claim], *, within: float = 60.0) -> None:
        """Drive every claim to its final state: unprepare all but ``desired``, then prepare
        ``desired``, each retried (as the kubelet retries) until it succeeds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        rest = [c for c in self.claims if c not in desired]
        while rest:
            assert loop.time() < deadline, f"unprepare never succeeded for {rest}"
            errors = await self._call("unprepare", rest, 10.0) or {}
            rest = [c for c in rest if errors.get(c.uid) != ""]
            for claim in self.claims:
                if claim not in desired and claim not in rest:
                    self.known[claim.uid] = "unprepared"
        todo = list(desired)
        last: Mapping[str, dra.PrepareResult] = {}
        while todo:
            assert loop.time() < deadline, f"prepare never succeeded: {last}"
            last = await self._call("prepare", todo, 10.0) or {}
            todo = [c for c in todo if c.uid not in last or last[c.uid].error]
        for claim in desired:
            self.known[claim.uid] = "prepared"


async def check_node(run: Run, domain_of_label: str | None) -> None:
    """The invariants at rest (faults off, every claim in its final state)."""
    checkpoint = harness.read_checkpoint(run.root)  # decodes: never corrupt
    prepared = {uid for uid, state in run.known.items() if state == "prepared"}
    assert set(run.known) == {c.uid for c in run.claims}
    assert {uid for uid, _ in checkpoint.completed()} == prepared
    # Besides the prepared claims' entries, only the tombstones of unprepared ones (they hold
    # no device and expire after 90 s).
    aborted = {
        uid: e for uid, e in checkpoint.claims.items() if e.state is cp.ClaimState.PREPARE_ABORTED
    }
    left = set(checkpoint.claims) - set(aborted)
    assert left == prepared, "an entry left for an unprepared claim"
    assert not set(aborted) & prepared, "a prepared claim with a tombstone"
    assert all(not e.devices for e in aborted.values()), "a tombstone holding devices"
    specs = harness.cdi_specs(run.root)
    assert set(specs) == prepared, "CDI specs and prepared claims differ"
    for uid, spec in specs.items():
        wanted = {
            i.split("=", 1)[1]
            for d in checkpoint.claims[uid].devices
            for i in d.cdi_device_ids
            if i.startswith(f"{names.CDI_VENDOR}/{names.CDI_CLASS_CLAIM}=")
        }
        assert {d["name"] for d in spec["devices"]} == wanted, (uid, spec)
    node = await run.api.get(resources.NODES, run.node)
    labels = node["metadata"].get("labels") or {}
    label = labels.get(names.COMPUTE_DOMAIN_LABEL)
    claims = {c.uid[:8]: (c.kind, c.domain[:8], run.known.get(c.uid)) for c in run.claims}
    entries = {uid[:8]: e.state.name for uid, e in sorted(checkpoint.claims.items())}
    assert label == domain_of_label, (
        f"node label {label!r}, expected {domain_of_label!r}; claims (kind, domain, state as "
        f"the kubelet knows it): {claims}; checkpoint entries: {entries}"
    )
    if run.counter is not None:  # no write of the plugin undid another party's
        assert (node["metadata"].get("annotations") or {}).get(harness.COUNTER) == run.counter
