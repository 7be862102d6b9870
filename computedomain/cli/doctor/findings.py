"""What the doctor can find: the causes it names, and one finding per problem.

A :class:`Finding` is one reason a domain (or one of its workload pods) is not Ready: which
cause, which object it concerns (a node, a pod, a claim, a clique), on which node, what is
wrong and what to do about it. Produced by :mod:`.workloads` and :mod:`.daemons`, ordered by
:mod:`.diagnosis`, printed by :mod:`.report`. Pure data.
"""

from __future__ import annotations

import enum

import attrs


class Cause(enum.StrEnum):
    """Why something is not Ready. The values appear in the text and JSON output, so tools may
    match on them; they never change meaning."""

    # The controller has not rendered the domain's objects (no daemon DaemonSet).
    NOT_PROCESSED = "NotProcessed"
    # The controller cannot serve the spec: template name taken, invalid name.
    SPEC_PROBLEM = "SpecProblem"
    # A workload pod's channel claim has no allocation: the scheduler found no device.
    CLAIM_NOT_ALLOCATED = "ClaimNotAllocated"
    # The kubelet plugin does not serve the node: no ResourceSlice of the driver there, no
    # plugin pod or one that is not Ready, or the kubelet says the driver is not registered.
    PLUGIN_NOT_REGISTERED = "PluginNotRegistered"
    # The node carries another domain's label: one domain per node at a time.
    NODE_OF_OTHER_DOMAIN = "NodeOfOtherDomain"
    # The plugin keeps retrying a prepare for a reason other than waiting for the daemon.
    PREPARE_RETRYING = "PrepareRetrying"
    # The node is labelled for the domain, yet no daemon pod of the domain is there.
    DAEMON_MISSING = "DaemonMissing"
    # A daemon pod is not running: unschedulable, or its containers are not started.
    DAEMON_PENDING = "DaemonPending"
    # Every index of the daemon's clique is taken (MAX_NODES_PER_IMEX_DOMAIN entries).
    INDEX_SPACE_FULL = "IndexSpaceFull"
    # A host nvidia-imex.service holds the IMEX session (NV_ERR_IN_USE).
    HOST_IMEX_CONFLICT = "HostIMEXConflict"
    # nvidia-imex found no local interface for any address in its nodes config.
    IMEX_NO_INTERFACE = "IMEXNoInterface"
    # Another problem the daemon reported on its pod (index policy, replaced pod, membership).
    DAEMON_PROBLEM = "DaemonProblem"
    # A daemon pod runs but its readiness check fails.
    DAEMON_NOT_READY = "DaemonNotReady"
    # A daemon pod is Ready but its entry is missing or NotReady.
    DAEMON_NOT_REGISTERED = "DaemonNotRegistered"
    # Host-managed IMEX: a node's host nvidia-imex does not answer READY.
    HOST_IMEX_NOT_READY = "HostIMEXNotReady"
    # The domain is not Ready and none of the above explains it.
    NOT_READY = "NotReady"


@attrs.frozen
class Subject:
    """The object a finding concerns."""

    kind: str  # Node, Pod, ResourceClaim, ComputeDomainClique, DaemonSet, ComputeDomain
    name: str
    namespace: str = ""

    def __str__(self) -> str:
        ref = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {ref}"


@attrs.frozen
class Finding:
    """One problem of one domain: ``message`` says what is wrong, ``remedy`` what to do."""

    domain_uid: str
    cause: Cause
    subject: Subject
    message: str
    remedy: str
    node: str = ""
