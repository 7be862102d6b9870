"""The simulated resourceclaim controller: makes pods' claims from templates and releases
claims whose pods are gone (:mod:`.resourceclaims` decides).

Started by :mod:`computedomain_sim.cluster`. One queue with two kinds of keys: ``pod:ns/name``
(a pod that may need claims) and ``claim:ns/name`` (a claim whose ``reservedFor`` may name pods
that are gone). A pod's change enqueues it and the claims it reserves; a claim's change enqueues
it; a template's arrival enqueues the pods of its namespace that wait for it.

Ten workers, as kube-controller-manager runs this controller (``--concurrent-resourceclaim-syncs``
defaults to 10): every key costs one or two API writes, and when a domain forms every daemon pod
needs its claim at once; with one worker they waited in line. The queue never hands one key to
two workers, and the keys of one pod and of its claims only meet in compare-and-swap writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from computedomain.api import jsoncodec
from computedomain.kube import errors
from computedomain.kube.informer import FuncHandler
from computedomain.kube.resources import PODS, RESOURCE_CLAIM_TEMPLATES, RESOURCE_CLAIMS
from computedomain.kube.store import (
    index_by_namespace,
    index_by_owner_uid,
    index_by_uid,
    object_key,
)
from computedomain.kube.workqueue import RateLimitingQueue

from . import names, resourceclaims
from .running import ControlPlaneController, run_controller

__all__ = ["ResourceClaimController"]

Obj = Mapping[str, Any]
WORKERS = 10


class ResourceClaimController(ControlPlaneController):
    """Claims for pods from templates; release of unused claims."""

    def _wire(self) -> None:
        self.pods = self.factory.informer(
            PODS, indexers={"uid": index_by_uid, "namespace": index_by_namespace}
        )
        self.claims = self.factory.informer(RESOURCE_CLAIMS, indexers={"owner": index_by_owner_uid})
        self.templates = self.factory.informer(RESOURCE_CLAIM_TEMPLATES)
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            name="resourceclaim", clock=self.clock
        )
        self.pods.add_handler(
            FuncHandler(add=self._pod, update=lambda _o, n: self._pod(n), delete=self._pod)
        )
        self.claims.add_handler(
            FuncHandler(
                add=lambda c: self.queue.add(f"claim:{object_key(c)}"),
                update=lambda _o, n: self.queue.add(f"claim:{object_key(n)}"),
            )
        )
        self.templates.add_handler(
            FuncHandler(add=self._template, update=lambda _o, n: self._template(n))
        )

    def _pod(self, pod: Obj) -> None:
        self.queue.add(f"pod:{object_key(pod)}")
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("resourceClaimName"):
                self.queue.add(f"claim:{namespace}/{status['resourceClaimName']}")
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            if entry.get("resourceClaimName"):
                self.queue.add(f"claim:{namespace}/{entry['resourceClaimName']}")

    def _template(self, template: Obj) -> None:
        namespace = str((template.get("metadata") or {}).get("namespace", ""))
        for pod in self.pods.store.by_index("namespace", namespace):
            self.queue.add(f"pod:{object_key(pod)}")

    async def run(self) -> None:
        """Run until cancelled."""
        await run_controller(
            self.factory,
            (self.pods, self.claims, self.templates),
            self.queue,
            self.sync,
            workers=WORKERS,
        )

    async def sync(self, key: str) -> None:
        """Handle ``pod:<key>`` or ``claim:<key>``. Raises API errors (the queue retries)."""
        kind, _, object_key_ = key.partition(":")
        if kind == "pod":
            await self._sync_pod(object_key_)
        else:
            await self._sync_claim(object_key_)

    async def _sync_pod(self, key: str) -> None:
        pod = self.pods.store.get(key)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        namespace = str(pod["metadata"]["namespace"])
        templates = {
            str(t["metadata"]["name"]): t
            for t in self.templates.store.list()
            if t["metadata"].get("namespace") == namespace
        }
        owned = self.claims.store.by_index("owner", str(pod["metadata"]["uid"]))
        suffixes = {
            str(e.get("name")): names.random_suffix()
            for e in (pod.get("spec") or {}).get("resourceClaims") or []
        }
        plan = resourceclaims.claims_for_pod(pod, templates, owned, suffixes)
        for claim in plan.creates:
            await self.api.create(RESOURCE_CLAIMS, claim, namespace)
        recorded = [{"name": n, "resourceClaimName": c} for n, c in plan.statuses]
        current = (pod.get("status") or {}).get("resourceClaimStatuses") or []
        if recorded and recorded != current:
            try:
                await self.api.patch(
                    PODS,
                    pod["metadata"]["name"],
                    {"status": {"resourceClaimStatuses": recorded}},
                    namespace=namespace,
                    subresource="status",
                )
            except errors.NotFound:
                return

    async def _sync_claim(self, key: str) -> None:
        claim = self.claims.store.get(key)
        if claim is None:
            return
        namespace = str(claim["metadata"].get("namespace", ""))
        reserved = (claim.get("status") or {}).get("reservedFor") or []
        # Only the reserving pods matter: look them up by UID (not a map of every pod, which
        # at thousands of pods was most of the cost of each claim event).
        live: dict[str, Obj] = {}
        for ref in reserved:
            for pod in self.pods.store.by_index("uid", str(ref.get("uid", ""))):
                live[str(pod["metadata"]["uid"])] = pod
        for ref in reserved:
            if ref.get("resource") == "pods" and str(ref.get("uid")) not in live:
                # Maybe a pod our informer has not seen yet: ask the API server before
                # taking the claim away from it (as the real controller does).
                with contextlib.suppress(errors.NotFound):
                    current = await self.api.get(PODS, str(ref.get("name", "")), namespace)
                    if current["metadata"].get("uid") == ref.get("uid"):
                        live[str(ref["uid"])] = current
        release = resourceclaims.release(claim, live)
        if release is None:
            return
        body = jsoncodec.copy(claim)
        try:
            if release.status != (claim.get("status") or {}):
                body["status"] = release.status
                body = await self.api.update_status(RESOURCE_CLAIMS, body)
            if release.remove_finalizer:
                finalizers = [
                    f
                    for f in body["metadata"].get("finalizers") or []
                    if f != resourceclaims.PROTECTION_FINALIZER
                ]
                body["metadata"]["finalizers"] = finalizers
                await self.api.update(RESOURCE_CLAIMS, body)
        except errors.NotFound:
            return
