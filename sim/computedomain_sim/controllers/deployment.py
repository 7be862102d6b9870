"""The Deployment controller's decisions, as kube-controller-manager makes them: a Deployment
owns ReplicaSets, one per pod template (named ``<deployment>-<pod-template-hash>``, the hash
also a label of its selector, template and pods), and rolls from the old ones to the new one
with its strategy: ``RollingUpdate`` within ``maxSurge``/``maxUnavailable``, or ``Recreate``
(old pods gone before the new ReplicaSet is scaled up). Each ReplicaSet carries the
``deployment.kubernetes.io/revision`` annotation (``kubectl rollout history`` and ``undo`` read
it); old ReplicaSets scaled to zero are kept up to ``revisionHistoryLimit``. The status has the
counters and the ``Available`` and ``Progressing`` conditions with kube's reasons.

Called by :mod:`.deployment_controller` with a snapshot from its informers; one call is one
step of the rollout (create the new ReplicaSet, or scale one way, or clean up), as in
kube-controller-manager. Pure. The hash is FNV-32a over the template's canonical JSON rather
than Go's printout of its typed struct, so its values differ from kube's
(docs/embedded-apiserver.md#known-differences).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

__all__ = [
    "REVISION",
    "TEMPLATE_HASH_LABEL",
    "DeploymentPlan",
    "controlled_by",
    "equal_ignore_hash",
    "plan",
    "revision",
    "template_hash",
]

Obj = Mapping[str, Any]
TEMPLATE_HASH_LABEL: Final = "pod-template-hash"
REVISION: Final = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS: Final = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS: Final = "deployment.kubernetes.io/max-replicas"
# Annotations of the Deployment that are not copied to its ReplicaSets (kube's list).
_NOT_COPIED: Final = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        "deployment.kubernetes.io/revision-history",
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)
_SAFE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


@attrs.frozen
class DeploymentPlan:
    """ReplicaSets to create (bodies), to update (whole objects, with their resourceVersion:
    compare-and-swap) and to delete ((name, uid)); the status to write; events
    ((reason, message)) for the Deployment; and after how many seconds to sync again even if
    nothing changes (the progress deadline; None: only on changes); the revision annotation
    the Deployment itself is to carry, when it changes."""

    creates: tuple[dict[str, Any], ...] = ()
    updates: tuple[dict[str, Any], ...] = ()
    deletes: tuple[tuple[str, str], ...] = ()
    status: dict[str, Any] = attrs.field(factory=dict)
    events: tuple[tuple[str, str], ...] = ()
    recheck: float | None = None
    revision: str | None = None  # the Deployment's own revision annotation, when it changes


def template_hash(template: Obj, collision_count: int | None = None) -> str:
    """The ``pod-template-hash`` of a pod template: FNV-32a of its canonical JSON (and of
    ``collision_count`` as 8 little-endian bytes when given), its decimal digits spelled in
    the API server's safe alphabet as Kubernetes does. Pure."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += struct.pack("<Q", collision_count & 0xFFFFFFFF)
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in str(value))


def _without_hash(template: Any) -> dict[str, Any]:
    out = copy.deepcopy(dict(template or {}))
    meta = dict(out.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != TEMPLATE_HASH_LABEL}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    if meta:
        out["metadata"] = meta
    else:
        out.pop("metadata", None)
    return out


def equal_ignore_hash(a: Any, b: Any) -> bool:
    """Whether two pod templates are the same but for the ``pod-template-hash`` label."""
    return _without_hash(a) == _without_hash(b)


def revision(rs: Obj) -> int:
    """A ReplicaSet's revision annotation as a number (0 when absent or malformed)."""
    value = ((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION, "")
    return int(value) if str(value).isdigit() else 0


def controlled_by(obj: Obj, owner_uid: str) -> bool:
    return any(
        r.get("uid") == owner_uid and r.get("controller")
        for r in (obj.get("metadata") or {}).get("ownerReferences") or ()
    )


def _resolve(value: Any, total: int, *, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value or 0)


def fenceposts(deployment: Obj) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as pod counts; Recreate: (0, 0). Percentages of
    ``spec.replicas``: the surge rounded up, the unavailability down; both zero → one
    unavailable, as kube resolves them."""
    spec = deployment.get("spec") or {}
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    replicas = int(spec.get("replicas", 1))
    surge = _resolve(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = _resolve(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_unavailable(deployment: Obj) -> int:
    """How many of ``spec.replicas`` may be unavailable (helm's and kube's MaxUnavailable)."""
    replicas = int((deployment.get("spec") or {}).get("replicas", 1))
    if replicas == 0:
        return 0
    return min(fenceposts(deployment)[1], replicas)


def _replicas(rs: Obj) -> int:
    return int((rs.get("spec") or {}).get("replicas", 1))


def _st(rs: Obj, field: str) -> int:
    return int((rs.get("status") or {}).get(field) or 0)


def _created(rs: Obj) -> tuple[str, str]:
    meta = rs.get("metadata") or {}
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name", "")))


def _scaled(rs: Obj, replicas: int, annotations: Mapping[str, str]) -> dict[str, Any]:
    out = copy.deepcopy(dict(rs))
    out.setdefault("spec", {})["replicas"] = replicas
    meta = out.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    return out


class _Sync:
    """One sync's working state (the ReplicaSets as they will be after this step's writes)."""

    def __init__(self, deployment: Obj, replica_sets: Sequence[Obj], now: float) -> None:
        self.d = deployment
        self.meta = deployment.get("metadata") or {}
        self.spec = deployment.get("spec") or {}
        self.replicas = int(self.spec.get("replicas", 1))
        self.now = now
        self.stamp = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        uid = str(self.meta.get("uid", ""))
        live = sorted(
            (
                r
                for r in replica_sets
                if controlled_by(r, uid) and not (r.get("metadata") or {}).get("deletionTimestamp")
            ),
            key=_created,
        )
        template = self.spec.get("template") or {}
        self.new: Obj | None = next(
            (r for r in live if equal_ignore_hash((r.get("spec") or {}).get("template"), template)),
            None,
        )
        self.old = [r for r in live if r is not self.new]
        self.surge, self.unavailable = fenceposts(deployment)
        self.revision = max((revision(r) for r in self.old), default=0) + 1
        self.creates: list[dict[str, Any]] = []
        self.updates: dict[str, dict[str, Any]] = {}
        self.events: list[tuple[str, str]] = []
        self.progress: tuple[str, str, str] | None = None  # (status, reason, message)

    # ------------------------------------------------------------------ ReplicaSet writes

    def annotations(self) -> dict[str, str]:
        """What the new ReplicaSet carries: the Deployment's annotations (but kube's
        exceptions), its revision and the replica counts."""
        own = {
            k: str(v)
            for k, v in (self.meta.get("annotations") or {}).items()
            if k not in _NOT_COPIED
        }
        return {
            **own,
            REVISION: str(self.revision),
            DESIRED_REPLICAS: str(self.replicas),
            MAX_REPLICAS: str(self.replicas + self.surge),
        }

    def current(self, rs: Obj) -> Obj:
        return self.updates.get(str(rs["metadata"]["name"]), rs)

    def scale(self, rs: Obj, replicas: int, annotations: Mapping[str, str] | None = None) -> None:
        rs = self.current(rs)
        before = _replicas(rs)
        if annotations is None:
            annotations = {
                DESIRED_REPLICAS: str(self.replicas),
                MAX_REPLICAS: str(self.replicas + self.surge),
            }
        changed = _scaled(rs, replicas, annotations)
        if changed == rs:
            return
        name = str(rs["metadata"]["name"])
        self.updates[name] = changed
        if before != replicas:
            way = "up" if replicas > before else "down"
            self.events.append(
                (
                    "ScalingReplicaSet",
                    f"Scaled {way} replica set {name} from {before} to {replicas}",
                )
            )

    def create_new(self, replicas: int) -> None:
        template = copy.deepcopy(dict(self.spec.get("template") or {}))
        collisions = (self.d.get("status") or {}).get("collisionCount")
        hash_ = template_hash(template, collisions)
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), TEMPLATE_HASH_LABEL: hash_}
        selector = copy.deepcopy(dict(self.spec.get("selector") or {}))
        selector["matchLabels"] = {
            **(selector.get("matchLabels") or {}),
            TEMPLATE_HASH_LABEL: hash_,
        }
        name = f"{self.meta.get('name', '')}-{hash_}"
        rs: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": self.meta.get("namespace", "default"),
                "labels": dict(tmeta["labels"]),
                "annotations": self.annotations(),
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": self.meta.get("name", ""),
                        "uid": self.meta.get("uid", ""),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": int(self.spec.get("minReadySeconds") or 0),
                "selector": selector,
                "template": template,
            },
        }
        self.creates.append(rs)
        self.events.append(
            ("ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {replicas}")
        )
        self.progress = ("True", "NewReplicaSetCreated", f'Created new replica set "{name}"')

    def adopt_revision(self) -> None:
        """The new ReplicaSet gets the next revision (a rollback to an old template) and the
        Deployment's annotations."""
        if self.new is None:
            return
        annotations = self.annotations()
        if revision(self.new) >= self.revision:
            annotations[REVISION] = str(revision(self.new))
        self.scale(self.new, _replicas(self.current(self.new)), annotations)

    # ------------------------------------------------------------------ strategies

    def _new_replicas(self) -> int:
        """The new ReplicaSet's size for this step of a rolling update (kube's
        NewRSNewReplicas)."""
        new = _replicas(self.current(self.new)) if self.new is not None else 0
        if self.spec.get("strategy", {}).get("type", "RollingUpdate") != "RollingUpdate":
            return self.replicas
        total = sum(_replicas(self.current(r)) for r in self.old) + new
        ceiling = self.replicas + self.surge
        if total >= ceiling:
            return new
        return new + min(ceiling - total, self.replicas - new)

    def rolling(self) -> bool:
        """One step of a rolling update; True when something was scaled."""
        if self.new is None:
            self.create_new(self._new_replicas())
            return True
        new_size = _replicas(self.current(self.new))
        if new_size > self.replicas:
            self.scale(self.new, self.replicas)
            return True
        target = self._new_replicas()
        if target != new_size:
            self.scale(self.new, target)
            return True
        return self._scale_down_old()

    def _scale_down_old(self) -> bool:
        assert self.new is not None
        old = [self.current(r) for r in self.old]
        if sum(_replicas(r) for r in old) == 0:
            return False
        new = self.current(self.new)
        everyone = sum(_replicas(r) for r in old) + _replicas(new)
        min_available = self.replicas - self.unavailable
        new_unavailable = _replicas(new) - _st(new, "availableReplicas")
        budget = everyone - min_available - new_unavailable
        if budget <= 0:
            return False
        scaled = False
        # First the old pods that are not available anyway, oldest ReplicaSet first.
        for rs in sorted(old, key=_created):
            if budget <= 0:
                break
            spare = _replicas(rs) - _st(rs, "availableReplicas")
            if _replicas(rs) == 0 or spare <= 0:
                continue
            cut = min(spare, budget)
            self.scale(rs, _replicas(rs) - cut)
            budget -= cut
            scaled = True
        # Then available ones, as far as availability allows.
        available = sum(_st(self.current(r), "availableReplicas") for r in self.old)
        available += _st(new, "availableReplicas")
        room = available - min_available
        for rs in sorted((self.current(r) for r in self.old), key=_created):
            if room <= 0:
                break
            if _replicas(rs) == 0:
                continue
            cut = min(_replicas(rs), room)
            self.scale(rs, _replicas(rs) - cut)
            room -= cut
            scaled = True
        return scaled

    def recreate(self, old_pods_running: bool) -> bool:
        """One step of Recreate; True when something was scaled or created."""
        scaled = False
        for rs in self.old:
            if _replicas(self.current(rs)) != 0:
                self.scale(rs, 0)
                scaled = True
        if scaled or old_pods_running:
            return scaled
        if self.new is None:
            self.create_new(self.replicas)
            return True
        if _replicas(self.current(self.new)) != self.replicas:
            self.scale(self.new, self.replicas)
            return True
        return False

    def cleanup(self) -> list[tuple[str, str]]:
        """Old ReplicaSets beyond ``revisionHistoryLimit``: empty ones, lowest revision
        first."""
        limit = self.spec.get("revisionHistoryLimit")
        if limit is None:
            return []
        extra = len(self.old) - int(limit)
        out = []
        for rs in sorted(self.old, key=revision)[: max(extra, 0)]:
            meta = rs.get("metadata") or {}
            settled = int(meta.get("generation") or 1) <= _st(rs, "observedGeneration")
            if _replicas(rs) == 0 and _st(rs, "replicas") == 0 and settled:
                out.append((str(meta.get("name", "")), str(meta.get("uid", ""))))
        return out

    # ------------------------------------------------------------------ status

    def status(self) -> tuple[dict[str, Any], float | None]:
        """The status to write and, while the rollout is under way, the seconds until the
        progress deadline."""
        every = [self.current(r) for r in [*self.old, *([self.new] if self.new else [])]]
        new = self.current(self.new) if self.new is not None else None
        previous = dict(self.d.get("status") or {})
        st: dict[str, Any] = {
            "observedGeneration": int(self.meta.get("generation") or 1),
            "replicas": sum(_st(r, "replicas") for r in every),
            "updatedReplicas": _st(new, "replicas") if new is not None else 0,
            "readyReplicas": sum(_st(r, "readyReplicas") for r in every),
            "availableReplicas": sum(_st(r, "availableReplicas") for r in every),
        }
        st["unavailableReplicas"] = max(self.replicas - st["availableReplicas"], 0)
        if "collisionCount" in previous:
            st["collisionCount"] = previous["collisionCount"]
        conditions = [dict(c) for c in previous.get("conditions") or ()]
        if st["availableReplicas"] >= self.replicas - max_unavailable(self.d):
            available = ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
        else:
            available = (
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        conditions = self._set(conditions, "Available", *available)
        recheck = None
        if self.spec.get("paused"):
            conditions = self._set(conditions, "Progressing", "Unknown", "DeploymentPaused",
                                   "Deployment is paused")  # fmt: skip
        else:
            conditions, recheck = self._progress(conditions, st, previous, new)
        st["conditions"] = conditions
        return st, recheck

    def _progress(
        self,
        conditions: list[dict[str, Any]],
        st: dict[str, Any],
        previous: dict[str, Any],
        new: Obj | None,
    ) -> tuple[list[dict[str, Any]], float | None]:
        name = str(new["metadata"]["name"]) if new is not None else ""
        current = next((c for c in conditions if c.get("type") == "Progressing"), None)
        if self.progress is not None:
            return self._set(conditions, "Progressing", *self.progress), None
        if current is None and new is not None:
            found = ("True", "FoundNewReplicaSet", f'Found new replica set "{name}"')
            conditions = self._set(conditions, "Progressing", *found)
            current = conditions[-1]
        if current is not None and current.get("reason") == "DeploymentPaused":
            conditions = self._set(conditions, "Progressing", "Unknown", "DeploymentResumed",
                                    "Deployment is resumed")  # fmt: skip
            current = conditions[-1]
        deadline = self.spec.get("progressDeadlineSeconds")
        if deadline is None:
            return conditions, None
        complete = (
            st["updatedReplicas"] == self.replicas
            and st["replicas"] == self.replicas
            and st["availableReplicas"] == self.replicas
        )
        done = (
            current is not None
            and current.get("reason") == "NewReplicaSetAvailable"
            and st["replicas"] == st["updatedReplicas"]
        )
        if done:
            return conditions, None
        if complete:
            message = f'ReplicaSet "{name}" has successfully progressed.'
            return self._set(conditions, "Progressing", "True", "NewReplicaSetAvailable",
                             message), None  # fmt: skip
        old_surplus = int(previous.get("replicas") or 0) - int(previous.get("updatedReplicas") or 0)
        moving = (
            st["updatedReplicas"] > int(previous.get("updatedReplicas") or 0)
            or st["replicas"] - st["updatedReplicas"] < old_surplus
            or st["readyReplicas"] > int(previous.get("readyReplicas") or 0)
            or st["availableReplicas"] > int(previous.get("availableReplicas") or 0)
        )
        if moving:
            message = f'ReplicaSet "{name}" is progressing.'
            conditions = self._set(
                conditions, "Progressing", "True", "ReplicaSetUpdated", message, touch=True
            )
            return conditions, float(deadline)
        current = next((c for c in conditions if c.get("type") == "Progressing"), None)
        if current is None or current.get("reason") == "ProgressDeadlineExceeded":
            return conditions, None
        updated = _epoch(str(current.get("lastUpdateTime") or ""))
        left = updated + float(deadline) - self.now if updated is not None else float(deadline)
        if left < 0:
            message = f'ReplicaSet "{name}" has timed out progressing.'
            return self._set(conditions, "Progressing", "False", "ProgressDeadlineExceeded",
                             message), None  # fmt: skip
        return conditions, left + 1.0

    def _set(
        self,
        conditions: list[dict[str, Any]],
        kind: str,
        status: str,
        reason: str,
        message: str,
        *,
        touch: bool = False,
    ) -> list[dict[str, Any]]:
        """kube's SetDeploymentCondition: the same status and reason change nothing (unless
        ``touch``: a progressing rollout refreshes its update time and message); a new status
        moves the transition time; the condition goes to the end of the list."""
        current = next((c for c in conditions if c.get("type") == kind), None)
        same = current is not None and (current.get("status"), current.get("reason")) == (
            status,
            reason,
        )
        if same and not touch:
            return conditions
        entry = {
            "type": kind,
            "status": status,
            "lastUpdateTime": self.stamp,
            "lastTransitionTime": self.stamp,
            "reason": reason,
            "message": message,
        }
        if current is not None and current.get("status") == status:
            entry["lastTransitionTime"] = current.get("lastTransitionTime", self.stamp)
        return [c for c in conditions if c.get("type") != kind] + [entry]


def _epoch(stamp: str) -> float | None:
    try:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def plan(
    deployment: Obj,
    replica_sets: Sequence[Obj],
    *,
    now: float,
    old_pods_running: bool = False,
) -> DeploymentPlan:
    """One sync of ``deployment``. ``replica_sets``: those in its namespace (only the ones it
    controls count); ``now``: epoch seconds; ``old_pods_running``: whether a pod of an old
    ReplicaSet still runs (Recreate waits for them). Pure."""
    sync = _Sync(deployment, replica_sets, now)
    meta = sync.meta
    moved = True
    if not meta.get("deletionTimestamp"):
        sync.adopt_revision()
        if sync.spec.get("paused"):
            if sync.new is not None and not any(_replicas(r) for r in sync.old):
                sync.scale(sync.new, sync.replicas)
        else:
            strategy = (sync.spec.get("strategy") or {}).get("type", "RollingUpdate")
            moved = sync.recreate(old_pods_running) if strategy == "Recreate" else sync.rolling()
    status, recheck = sync.status()
    complete = status["updatedReplicas"] == status["replicas"] == sync.replicas
    complete = complete and status["availableReplicas"] == sync.replicas
    deletes = sync.cleanup() if not moved and complete else []
    new_revision: str | None = None
    if sync.new is not None or sync.creates:
        target = sync.creates[0] if sync.creates else sync.current(sync.new or {})
        value = str(((target.get("metadata") or {}).get("annotations") or {}).get(REVISION, ""))
        if value and (meta.get("annotations") or {}).get(REVISION) != value:
            new_revision = value
    return DeploymentPlan(
        creates=tuple(sync.creates),
        updates=tuple(sync.updates.values()),
        deletes=tuple(deletes),
        status=status,
        events=tuple(sync.events),
        recheck=recheck,
        revision=new_revision,
    )
