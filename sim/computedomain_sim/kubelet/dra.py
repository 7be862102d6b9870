"""The kubelet's DRA manager: prepares a pod's claims through their drivers' plugins before its
containers start, and unprepares them when the last pod using a claim on this node is done.

Called by :mod:`.podworker`. Talks to the API server (GET each claim, as the kubelet does) and to
plugins through :class:`.plugins.PluginManager` (NodePrepareResources/NodeUnprepareResources with
the kubelet's 45 s deadline). Kubelet semantics: a claim must be allocated and reserved for the
pod; all of a driver's claims go in one call; a per-claim error, a claim left out of the answer
or a failed call fails the attempt (the pod worker retries with back-off and reports
``FailedPrepareDynamicResources`` with the error text). Prepared claims are remembered by UID
with the pods using them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from computedomain.kube import errors
from computedomain.kube.resources import RESOURCE_CLAIMS
from computedomain.kube.rest import Api
from computedomain.proto import dra as dra_proto
from computedomain.proto import kubelet_client

from . import claims as pod_claims
from .claims import ClaimNotReady, PreparedDevice
from .plugins import PluginManager

__all__ = ["DraManager", "PrepareFailed", "PreparedClaims"]

Obj = Mapping[str, Any]


class PrepareFailed(RuntimeError):
    """A prepare or unprepare attempt failed; the message is what the user sees."""


@attrs.frozen
class PreparedClaims:
    """A pod's claims (pod claim name -> claim) and their prepared devices (claim UID -> ...)."""

    claims: Mapping[str, Obj]
    devices: Mapping[str, tuple[PreparedDevice, ...]]


@attrs.define
class _Prepared:
    ref: dra_proto.ClaimRef
    drivers: frozenset[str]
    devices: tuple[PreparedDevice, ...]
    users: set[str]


class DraManager:
    """Prepared claims of one node."""

    def __init__(self, api: Api, plugins: PluginManager, *, deadline: float = 45.0) -> None:
        self.api = api
        self.plugins = plugins
        self.deadline = deadline
        self._prepared: dict[str, _Prepared] = {}

    def forget_all(self) -> None:
        """Drop what was prepared (a reboot: the plugin's state is gone too)."""
        self._prepared.clear()

    async def prepare(self, pod: Obj) -> PreparedClaims:
        """Prepare every claim of ``pod``. Idempotent. Raises :class:`ClaimNotReady` (waiting
        for the claim) or :class:`PrepareFailed` (the driver said no)."""
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        pod_uid = str(meta.get("uid", ""))
        by_pod_claim: dict[str, Obj] = {}
        todo: dict[str, list[tuple[dra_proto.ClaimRef, Obj]]] = {}
        for entry in pod_claims.pod_claims(pod):
            if entry.claim_name is None:
                continue
            try:
                found: dict[str, Any] | None = await self.api.get(
                    RESOURCE_CLAIMS, entry.claim_name, namespace
                )
            except errors.NotFound:
                found = None
            pod_claims.check_ready(found, entry.claim_name, pod)
            assert found is not None
            claim: Obj = found
            by_pod_claim[entry.pod_claim_name] = claim
            uid = str(claim["metadata"]["uid"])
            known = self._prepared.get(uid)
            if known is not None:
                known.users.add(pod_uid)
                continue
            ref = dra_proto.ClaimRef(namespace=namespace, uid=uid, name=entry.claim_name)
            for driver in _drivers(claim):
                todo.setdefault(driver, []).append((ref, claim))
        results: dict[str, list[PreparedDevice]] = {}
        for driver, items in sorted(todo.items()):
            answers = await self._call_prepare(driver, [ref for ref, _ in items])
            for ref, _ in items:
                results.setdefault(ref.uid, []).extend(answers[ref.uid])
        for driver_items in todo.values():
            for ref, claim in driver_items:
                self._prepared[ref.uid] = _Prepared(
                    ref, frozenset(_drivers(claim)), tuple(results.get(ref.uid, ())), {pod_uid}
                )
        devices = {
            str(c["metadata"]["uid"]): self._prepared[str(c["metadata"]["uid"])].devices
            for c in by_pod_claim.values()
        }
        return PreparedClaims(by_pod_claim, devices)

    async def unprepare(self, pod_uid: str) -> None:
        """Unprepare the claims whose last user on this node was ``pod_uid``. Idempotent.
        Raises :class:`PrepareFailed` (the pod worker retries)."""
        last: dict[str, list[_Prepared]] = {}
        for prepared in self._prepared.values():
            if pod_uid in prepared.users and prepared.users <= {pod_uid}:
                for driver in prepared.drivers:
                    last.setdefault(driver, []).append(prepared)
        for driver, items in sorted(last.items()):
            client = self.plugins.client(driver)
            if client is None:
                msg = f"DRA driver {driver} is not registered"
                raise PrepareFailed(msg)
            try:
                answer = await client.unprepare([p.ref for p in items], deadline=self.deadline)
            except kubelet_client.KubeletRpcError as exc:
                msg = f"NodeUnprepareResources failed: {exc}"
                raise PrepareFailed(msg) from exc
            failures = [
                f"claim {p.ref.name}: {answer[p.ref.uid]}"
                if p.ref.uid in answer
                else f"claim {p.ref.name}: left out"
                for p in items
                if answer.get(p.ref.uid, "left out")
            ]
            if failures:
                msg = f"NodeUnprepareResources failed: {'; '.join(failures)}"
                raise PrepareFailed(msg)
            for p in items:
                self._prepared.pop(p.ref.uid, None)
        for prepared in self._prepared.values():
            prepared.users.discard(pod_uid)

    async def _call_prepare(
        self, driver: str, refs: list[dra_proto.ClaimRef]
    ) -> dict[str, list[PreparedDevice]]:
        client = self.plugins.client(driver)
        if client is None:
            msg = f"DRA driver {driver} is not registered"
            raise PrepareFailed(msg)
        try:
            answer = await client.prepare(refs, deadline=self.deadline)
        except kubelet_client.KubeletRpcError as exc:
            msg = f"NodePrepareResources failed: {exc}"
            raise PrepareFailed(msg) from exc
        missing = [r.name for r in refs if r.uid not in answer]
        if missing:
            msg = f"NodePrepareResources left out {len(missing)} claims ({', '.join(missing)})"
            raise PrepareFailed(msg)
        errors_ = [f"claim {r.name}: {answer[r.uid].error}" for r in refs if answer[r.uid].error]
        if errors_:
            msg = f"NodePrepareResources failed for {'; '.join(errors_)}"
            raise PrepareFailed(msg)
        return {
            r.uid: [
                PreparedDevice(
                    tuple(d.request_names), d.pool_name, d.device_name, tuple(d.cdi_device_ids)
                )
                for d in answer[r.uid].devices
            ]
            for r in refs
        }


def _drivers(claim: Obj) -> list[str]:
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get(
        "results"
    ) or []
    return sorted({str(r.get("driver")) for r in results if r.get("driver")})


__all__ += ["ClaimNotReady"]
