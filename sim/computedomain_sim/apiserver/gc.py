"""Background controllers of the server: owner-reference garbage collection, namespace
deletion and CRD cleanup.

:class:`Collector` is a :mod:`.store` listener that keeps an owner-uid → dependents index and
queues work; :meth:`Collector.run` (a task started by :class:`.server.EmbeddedApiServer`)
drains the queues, acting through :mod:`.deletion` and :mod:`.writes` exactly as the
kube-controller-manager's controllers act through the API:

* a dependent none of whose owners exists any more (deleted, never existed, or a uid
  mismatch) is deleted (background); owners that are gone are removed from dependents that
  still have a live owner;
* an owner with the ``orphan`` finalizer has itself removed from its dependents' owner
  references, then the finalizer removed;
* an owner with the ``foregroundDeletion`` finalizer has its dependents deleted, and loses the
  finalizer once no dependent with ``blockOwnerDeletion`` remains;
* a ``Terminating`` namespace is emptied, then its ``kubernetes`` finalizer removed and the
  namespace deleted;
* a CRD being deleted has its objects deleted, then its cleanup finalizer removed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from . import deletion, objects, status, writes
from .crds import CLEANUP_FINALIZER, CRD_KEY, CrdController
from .registry import ResourceType
from .state import ApiState
from .store import Event, StorageKey

log = logging.getLogger(__name__)
NS_KEY = ("", "namespaces")
Ref = tuple[StorageKey, str]


class Collector:
    def __init__(self, state: ApiState, crds: CrdController) -> None:
        self.state = state
        self.crds = crds
        self.dependents: dict[str, set[Ref]] = {}
        self.check: set[Ref] = set()  # dependents to examine
        self.owners: set[Ref] = set()  # owners with orphan/foreground finalizers
        self.namespaces: set[str] = set()  # terminating namespaces
        self.service_accounts: set[str] = set()  # namespaces that need a "default" SA
        self.wake = asyncio.Event()

    # ------------------------------------------------------------------ listener

    def on_event(self, ev: Event) -> None:
        ref = (ev.skey, ev.new.key)
        prev_owners = ev.prev.owners if ev.prev is not None else ()
        new_owners = () if ev.type == "DELETED" else ev.new.owners
        if prev_owners != new_owners:
            for uid in prev_owners:
                deps = self.dependents.get(uid)
                if deps is not None:
                    deps.discard(ref)
                    if not deps:
                        del self.dependents[uid]
            for uid in new_owners:
                self.dependents.setdefault(uid, set()).add(ref)
        if ev.type == "DELETED":
            self.check.update(self.dependents.get(ev.new.uid, ()))
            if ev.prev is not None:
                self._recheck_owners_of(ev.prev.owners)
            if ev.skey != NS_KEY and ev.new.namespace in self.namespaces:
                self.wake.set()
        else:
            # Owners that go away later are found through the DELETED path; an object needs a
            # look of its own only when its owner references are new.
            if new_owners and (ev.type == "ADDED" or prev_owners != new_owners):
                self.check.add(ref)
            raw = ev.new.raw
            if b'"deletionTimestamp"' in raw and (
                b'"orphan"' in raw or b'"foregroundDeletion"' in raw
            ):
                self.owners.add(ref)
            if ev.skey == NS_KEY and b'"Terminating"' in raw:
                self.namespaces.add(ev.new.key)
            if ev.skey == NS_KEY and ev.type == "ADDED":
                self.service_accounts.add(ev.new.key)
        if (
            self.check
            or self.owners
            or self.namespaces
            or self.service_accounts
            or self.crds.terminating
        ):
            self.wake.set()

    def prime(self) -> None:
        """Index and queue what is already stored (after a restart)."""
        store = self.state.store
        for skey in store.storage_keys():
            for key in store.keys(skey):
                entry = store.get(skey, key)
                if entry is None:
                    continue
                for uid in entry.owners:
                    self.dependents.setdefault(uid, set()).add((skey, key))
                if entry.owners:
                    self.check.add((skey, key))
                if b'"deletionTimestamp"' in entry.raw:
                    self.owners.add((skey, key))
                    if skey == NS_KEY:
                        self.namespaces.add(key)
                    if skey == CRD_KEY:
                        self.crds.terminating.add(key)
                if skey == NS_KEY:
                    self.service_accounts.add(key)
        self.wake.set()

    def notify_namespace(self, name: str) -> None:
        self.namespaces.add(name)
        self.wake.set()

    def _recheck_owners_of(self, owner_uids: tuple[str, ...]) -> None:
        for uid in owner_uids:
            loc = self.state.store.uids.get(uid)
            if loc is not None:
                self.owners.add(loc)

    # ------------------------------------------------------------------ worker

    async def run(self) -> None:
        """Drain the queues until cancelled; one failing item never stops the loop."""
        while True:
            await self.wake.wait()
            self.wake.clear()
            await asyncio.sleep(self.state.config.gc_interval)
            try:
                self.step()
            except Exception:  # keep collecting: a bug here must not stop the controllers
                log.exception("gc: step failed")

    def step(self) -> None:
        """Process everything queued so far (synchronously)."""
        check, self.check = self.check, set()
        owners, self.owners = self.owners, set()
        for ref in sorted(owners):
            self._guard(self._process_owner, ref)
        for ref in sorted(check):
            self._guard(self._process_dependent, ref)
        for name in sorted(self.namespaces):
            self._guard(self._process_namespace, name)
        for name in sorted(self.crds.terminating):
            self._guard(self._process_crd, name)
        accounts, self.service_accounts = self.service_accounts, set()
        for name in sorted(accounts):
            self._guard(self._default_service_account, name)

    def _default_service_account(self, namespace: str) -> None:
        """The ServiceAccount controller: every active namespace has a ``default`` account."""
        ns = self.state.store.get(NS_KEY, namespace)
        sa_rt = self._rt(("", "serviceaccounts"))
        if ns is None or sa_rt is None or b'"deletionTimestamp"' in ns.raw:
            return
        if self.state.store.get(sa_rt.storage_key, f"{namespace}/default") is None:
            writes.create(self.state, sa_rt, namespace, {"metadata": {"name": "default"}})

    def _guard(self, fn: Any, arg: Any) -> None:
        try:
            fn(arg)
        except status.ApiStatusError as exc:
            if exc.code not in (404, 409):
                log.warning("gc: %s %s: %s", fn.__name__, arg, exc.message)
        except Exception:
            log.exception("gc: %s %s failed", fn.__name__, arg)

    def _rt(self, skey: StorageKey) -> ResourceType | None:
        return self.state.registry.by_storage(skey)

    def _owner_state(self, dep_ns: str, ref: dict[str, Any]) -> str:
        """'solid', 'waiting' (foreground-deleting), 'absent' or 'unknown' (unresolvable)."""
        api_version = str(ref.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        rt = self.state.registry.by_kind(group, version, str(ref.get("kind", "")))
        rt = rt or self.state.registry.by_group_kind(group, str(ref.get("kind", "")))
        if rt is None:
            return "unknown"
        key = objects.key_of(dep_ns if rt.namespaced else "", str(ref.get("name", "")))
        entry = self.state.store.get(rt.storage_key, key)
        if entry is None or entry.uid != ref.get("uid"):
            return "absent"
        if b'"foregroundDeletion"' in entry.raw and b'"deletionTimestamp"' in entry.raw:
            return "waiting"
        return "solid"

    def _process_dependent(self, ref: Ref) -> None:
        skey, key = ref
        entry = self.state.store.get(skey, key)
        rt = self._rt(skey)
        if entry is None or rt is None or not entry.owners:
            return
        obj = entry.decode()
        meta = obj["metadata"]
        refs = [r for r in meta.get("ownerReferences") or () if isinstance(r, dict)]
        states = [self._owner_state(entry.namespace, r) for r in refs]
        if "solid" in states or "unknown" in states:
            keep = [r for r, s in zip(refs, states, strict=True) if s in ("solid", "unknown")]
            if len(keep) != len(refs):
                meta["ownerReferences"] = keep
                writes.replace(self.state, rt, entry, obj)
            return
        if meta.get("deletionTimestamp"):
            return
        waiting = "waiting" in states
        policy = "Foreground" if waiting and self.dependents.get(entry.uid) else None
        opts = deletion.DeleteOptions(propagation=policy, uid=entry.uid)
        deletion.delete(self.state, rt, entry.namespace, entry.name, opts)

    def _process_owner(self, ref: Ref) -> None:
        skey, key = ref
        entry = self.state.store.get(skey, key)
        rt = self._rt(skey)
        if entry is None or rt is None:
            return
        obj = entry.decode()
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or ())
        if not meta.get("deletionTimestamp"):
            return
        deps = [d for d in self.dependents.get(entry.uid, ()) if d != ref]
        if deletion.ORPHAN in finalizers:
            for dskey, dkey in deps:
                self._drop_owner_ref(dskey, dkey, entry.uid)
            finalizers.remove(deletion.ORPHAN)
        elif deletion.FOREGROUND in finalizers:
            blocking = False
            for dskey, dkey in deps:
                dep = self.state.store.get(dskey, dkey)
                drt = self._rt(dskey)
                if dep is None or drt is None:
                    continue
                dobj = dep.decode()
                dmeta = dobj["metadata"]
                if not dmeta.get("deletionTimestamp"):
                    policy = "Foreground" if self.dependents.get(dep.uid) else None
                    opts = deletion.DeleteOptions(propagation=policy, uid=dep.uid)
                    res = deletion.delete(self.state, drt, dep.namespace, dep.name, opts)
                    if res.deleted:
                        continue
                for r in dmeta.get("ownerReferences") or ():
                    if r.get("uid") == entry.uid and r.get("blockOwnerDeletion"):
                        blocking = True
            if blocking:
                return
            finalizers.remove(deletion.FOREGROUND)
        else:
            return
        self._set_finalizers(rt, key, finalizers)

    def _drop_owner_ref(self, skey: StorageKey, key: str, owner_uid: str) -> None:
        entry = self.state.store.get(skey, key)
        rt = self._rt(skey)
        if entry is None or rt is None:
            return
        obj = entry.decode()
        refs = obj["metadata"].get("ownerReferences") or []
        keep = [r for r in refs if r.get("uid") != owner_uid]
        if len(keep) == len(refs):
            return
        if keep:
            obj["metadata"]["ownerReferences"] = keep
        else:
            obj["metadata"].pop("ownerReferences", None)
        writes.replace(self.state, rt, entry, obj)

    def _set_finalizers(self, rt: ResourceType, key: str, finalizers: list[str]) -> None:
        entry = self.state.store.get(rt.storage_key, key)
        if entry is None:
            return
        obj = entry.decode()
        if finalizers:
            obj["metadata"]["finalizers"] = finalizers
        else:
            obj["metadata"].pop("finalizers", None)
        writes.replace(self.state, rt, entry, obj)

    def _process_namespace(self, name: str) -> None:
        ns_entry = self.state.store.get(NS_KEY, name)
        if ns_entry is None:
            self.namespaces.discard(name)
            return
        remaining = 0
        for skey in self.state.store.storage_keys():
            rt = self._rt(skey)
            if rt is None or not rt.namespaced:
                continue
            for key in list(self.state.store.keys(skey, name)):
                remaining += 1
                entry = self.state.store.get(skey, key)
                if entry is None or b'"deletionTimestamp"' in entry.raw:
                    continue
                res = deletion.delete(
                    self.state, rt, name, entry.name, deletion.DeleteOptions(uid=entry.uid)
                )
                if res.deleted:
                    remaining -= 1
        if remaining:
            return
        ns = ns_entry.decode()
        spec = ns.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or () if f != "kubernetes"]
        ns_rt = self._rt(NS_KEY)
        assert ns_rt is not None
        if not spec["finalizers"] and not ns["metadata"].get("finalizers"):
            writes.commit(self.state, ns_rt, name, ns)
            writes.commit(self.state, ns_rt, name, None)
            self.namespaces.discard(name)
        else:
            writes.commit(self.state, ns_rt, name, ns)

    def _process_crd(self, name: str) -> None:
        entry = self.state.store.get(CRD_KEY, name)
        if entry is None:
            self.crds.terminating.discard(name)
            return
        crd = entry.decode()
        spec = crd.get("spec") or {}
        skey = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        rt = self._rt(skey)
        if rt is not None:
            for key in list(self.state.store.keys(skey)):
                obj_entry = self.state.store.get(skey, key)
                if obj_entry is None or b'"deletionTimestamp"' in obj_entry.raw:
                    continue
                deletion.delete(
                    self.state,
                    rt,
                    obj_entry.namespace,
                    obj_entry.name,
                    deletion.DeleteOptions(uid=obj_entry.uid),
                )
            if self.state.store.count(skey):
                return
        finalizers = [f for f in crd["metadata"].get("finalizers") or () if f != CLEANUP_FINALIZER]
        crd_rt = self._rt(CRD_KEY)
        assert crd_rt is not None
        self.crds.terminating.discard(name)
        self._set_finalizers(crd_rt, name, finalizers)
