"""attrs models of the objects we own: ComputeDomain and ComputeDomainClique.

Models are frozen; change them with :func:`attrs.evolve`. The wire form (camelCase names, which
fields upstream omits when empty) is described per field with :func:`wire` metadata and applied
by :mod:`computedomain.api.convert`; it must match upstream's Go types field for field
(docs/compatibility.md#api-objects), because both implementations read each other's objects.

Components keep Kubernetes objects they do not own (pods, claims, nodes) as JSON dicts; these
models are for our CRDs, whose every field the code reasons about.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final

import attrs

from computedomain.api import names

# How a field is omitted on the wire (Go's json tags): never, when None, when empty/zero.
OMIT_NEVER: Final = "never"
OMIT_NONE: Final = "none"
OMIT_EMPTY: Final = "empty"


def wire(name: str, omit: str = OMIT_EMPTY) -> dict[str, Any]:
    """attrs ``metadata`` for a field: its JSON name and its omission rule."""
    return {"wire": name, "omit": omit}


class AllocationMode(enum.StrEnum):
    """``spec.channel.allocationMode``: one IMEX channel, or every channel of the domain."""

    SINGLE = "Single"
    ALL = "All"


class Status(enum.StrEnum):
    """Readiness of a domain (``status.status``) or of one daemon entry."""

    READY = "Ready"
    NOT_READY = "NotReady"


class ConditionStatus(enum.StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


@attrs.frozen
class OwnerReference:
    api_version: str = attrs.field(metadata=wire("apiVersion", OMIT_NEVER))
    kind: str = attrs.field(metadata=wire("kind", OMIT_NEVER))
    name: str = attrs.field(metadata=wire("name", OMIT_NEVER))
    uid: str = attrs.field(metadata=wire("uid", OMIT_NEVER))
    controller: bool | None = attrs.field(default=None, metadata=wire("controller", OMIT_NONE))
    block_owner_deletion: bool | None = attrs.field(
        default=None, metadata=wire("blockOwnerDeletion", OMIT_NONE)
    )


@attrs.frozen
class ObjectMeta:
    """The parts of ``metadata`` our logic reads. Writes go through the raw object."""

    name: str = attrs.field(default="", metadata=wire("name"))
    namespace: str = attrs.field(default="", metadata=wire("namespace"))
    uid: str = attrs.field(default="", metadata=wire("uid"))
    resource_version: str = attrs.field(default="", metadata=wire("resourceVersion"))
    generation: int = attrs.field(default=0, metadata=wire("generation"))
    creation_timestamp: str | None = attrs.field(
        default=None, metadata=wire("creationTimestamp", OMIT_NONE)
    )
    deletion_timestamp: str | None = attrs.field(
        default=None, metadata=wire("deletionTimestamp", OMIT_NONE)
    )
    labels: Mapping[str, str] = attrs.field(factory=dict, metadata=wire("labels"))
    annotations: Mapping[str, str] = attrs.field(factory=dict, metadata=wire("annotations"))
    finalizers: tuple[str, ...] = attrs.field(default=(), metadata=wire("finalizers"))
    owner_references: tuple[OwnerReference, ...] = attrs.field(
        default=(), metadata=wire("ownerReferences")
    )

    @property
    def deleting(self) -> bool:
        return self.deletion_timestamp is not None


@attrs.frozen
class Condition:
    """A standard Kubernetes condition (``metav1.Condition``)."""

    type: str = attrs.field(metadata=wire("type", OMIT_NEVER))
    status: ConditionStatus = attrs.field(metadata=wire("status", OMIT_NEVER))
    reason: str = attrs.field(metadata=wire("reason", OMIT_NEVER))
    message: str = attrs.field(metadata=wire("message", OMIT_NEVER))
    last_transition_time: str = attrs.field(metadata=wire("lastTransitionTime", OMIT_NEVER))
    observed_generation: int | None = attrs.field(
        default=None, metadata=wire("observedGeneration", OMIT_NONE)
    )


@attrs.frozen
class ResourceClaimTemplateRef:
    name: str = attrs.field(metadata=wire("name", OMIT_NEVER))


@attrs.frozen
class ChannelSpec:
    resource_claim_template: ResourceClaimTemplateRef = attrs.field(
        metadata=wire("resourceClaimTemplate", OMIT_NEVER)
    )
    allocation_mode: AllocationMode | None = attrs.field(
        default=None, metadata=wire("allocationMode", OMIT_NONE)
    )

    @property
    def effective_allocation_mode(self) -> AllocationMode:
        """The CRD defaults the mode to ``Single``; an absent mode means the same."""
        return self.allocation_mode or AllocationMode.SINGLE


@attrs.frozen
class ComputeDomainSpec:
    channel: ChannelSpec = attrs.field(metadata=wire("channel", OMIT_NEVER))
    # Deprecated upstream; used only for the global status (and IP mode). Go omits 0.
    num_nodes: int = attrs.field(
        default=0, validator=attrs.validators.ge(0), metadata=wire("numNodes")
    )


@attrs.frozen
class ComputeDomainNode:
    """One entry of ``status.nodes`` (keyed by ``name``)."""

    name: str = attrs.field(metadata=wire("name", OMIT_NEVER))
    ip_address: str = attrs.field(metadata=wire("ipAddress", OMIT_NEVER))
    clique_id: str = attrs.field(metadata=wire("cliqueID", OMIT_NEVER))
    # Always serialised (not omitempty): 0 is a real index; -1 marks a node without fabric.
    index: int = attrs.field(default=0, metadata=wire("index", OMIT_NEVER))
    # Absent on entries written by old daemons; such entries count as ready (upstream 59b575a3).
    status: Status | None = attrs.field(default=None, metadata=wire("status", OMIT_NONE))
    # Additive (ours): the daemon pod that wrote the entry. A leaving daemon removes its entry
    # by node name and pod UID, never by IP (IPs are reused); absent on upstream's entries.
    pod_uid: str | None = attrs.field(default=None, metadata=wire("podUID", OMIT_NONE))


@attrs.frozen
class ComputeDomainStatus:
    status: Status = attrs.field(default=Status.NOT_READY, metadata=wire("status", OMIT_NEVER))
    nodes: tuple[ComputeDomainNode, ...] = attrs.field(default=(), metadata=wire("nodes"))
    # Additive (ours): standard conditions, so `kubectl wait --for=condition=Ready` works.
    conditions: tuple[Condition, ...] = attrs.field(default=(), metadata=wire("conditions"))


@attrs.frozen(kw_only=True)
class ComputeDomain:
    api_version: str = attrs.field(
        default=names.GROUP_VERSION, metadata=wire("apiVersion", OMIT_NEVER)
    )
    kind: str = attrs.field(default=names.COMPUTE_DOMAIN_KIND, metadata=wire("kind", OMIT_NEVER))
    metadata: ObjectMeta = attrs.field(metadata=wire("metadata", OMIT_NEVER))
    spec: ComputeDomainSpec = attrs.field(metadata=wire("spec", OMIT_NEVER))
    status: ComputeDomainStatus | None = attrs.field(
        default=None, metadata=wire("status", OMIT_NONE)
    )


@attrs.frozen
class DaemonInfo:
    """One entry of ``ComputeDomainClique.daemons`` (keyed by ``nodeName``)."""

    node_name: str = attrs.field(metadata=wire("nodeName", OMIT_NEVER))
    ip_address: str = attrs.field(metadata=wire("ipAddress", OMIT_NEVER))
    clique_id: str = attrs.field(metadata=wire("cliqueID", OMIT_NEVER))
    index: int = attrs.field(default=0, metadata=wire("index", OMIT_NEVER))
    status: Status | None = attrs.field(default=None, metadata=wire("status", OMIT_NONE))
    # Additive (ours), see ComputeDomainNode.pod_uid.
    pod_uid: str | None = attrs.field(default=None, metadata=wire("podUID", OMIT_NONE))

    def as_node(self) -> ComputeDomainNode:
        """The same entry in the shape of ``ComputeDomain.status.nodes``."""
        return ComputeDomainNode(
            name=self.node_name,
            ip_address=self.ip_address,
            clique_id=self.clique_id,
            index=self.index,
            status=self.status,
            pod_uid=self.pod_uid,
        )

    @classmethod
    def from_node(cls, node: ComputeDomainNode) -> DaemonInfo:
        return cls(
            node_name=node.name,
            ip_address=node.ip_address,
            clique_id=node.clique_id,
            index=node.index,
            status=node.status,
            pod_uid=node.pod_uid,
        )


@attrs.frozen(kw_only=True)
class ComputeDomainClique:
    api_version: str = attrs.field(
        default=names.GROUP_VERSION, metadata=wire("apiVersion", OMIT_NEVER)
    )
    kind: str = attrs.field(default=names.CLIQUE_KIND, metadata=wire("kind", OMIT_NEVER))
    metadata: ObjectMeta = attrs.field(metadata=wire("metadata", OMIT_NEVER))
    daemons: tuple[DaemonInfo, ...] = attrs.field(default=(), metadata=wire("daemons"))
