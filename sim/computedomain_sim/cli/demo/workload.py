"""The demo's objects: a namespace, a ComputeDomain and a Deployment of workers.

Called by :mod:`.session`, which creates them through the API; pure builders of JSON dicts.

The workers are a Deployment (the simulation runs Deployments, not Jobs) with one replica per
node. Each pod holds a claim from the domain's channel ResourceClaimTemplate and carries a
required pod anti-affinity on ``kubernetes.io/hostname``, so a real scheduler puts one worker on
every node. (The simulated scheduler ignores pod affinity; there the spread comes from each
node having a single ``channel-0`` device, which one claim at a time can hold.) A worker prints
the IMEX channel devices it sees (:data:`CHANNELS_MARKER` starts that line) and then sleeps
until it is stopped.
"""

from __future__ import annotations

from typing import Any

import attrs

from computedomain.api import names
from computedomain_sim.kubelet.launch import ENV_DEV_DIR

__all__ = [
    "CHANNELS_MARKER",
    "WORKER_CONTAINER",
    "Workload",
    "compute_domain",
    "namespace",
    "worker_deployment",
]

CHANNELS_MARKER = "imex-channels:"
WORKER_CONTAINER = "worker"
WORKER_LABEL = "app.kubernetes.io/name"
_CHANNEL_DIR = "/dev/nvidia-caps-imex-channels"

# Where the container's /dev additions are: the real /dev under mount-namespace isolation, the
# directory the simulated kubelet names in ENV_DEV_DIR under path mapping.
WORKER_SCRIPT = f"""\
import os, signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
root = os.environ.get({ENV_DEV_DIR!r}, "/dev")
found = os.path.join(root, {_CHANNEL_DIR.removeprefix("/dev/")!r})
channels = sorted(os.listdir(found)) if os.path.isdir(found) else []
shown = " ".join({_CHANNEL_DIR!r} + "/" + c for c in channels) or "none"
print({CHANNELS_MARKER!r}, shown, flush=True)
while True:
    time.sleep(3600)
"""


@attrs.frozen
class Workload:
    """What the demo creates: ``workers`` pods of ``domain`` in ``namespace``."""

    workers: int = attrs.field(validator=attrs.validators.ge(1))
    namespace: str = "demo"
    domain: str = "demo"

    @property
    def template(self) -> str:
        """The channel ResourceClaimTemplate the controller creates for the domain."""
        return f"{self.domain}-channel"

    @property
    def deployment(self) -> str:
        return f"{self.domain}-workers"

    @property
    def selector(self) -> dict[str, str]:
        """The labels of the worker pods."""
        return {WORKER_LABEL: self.deployment}


def namespace(workload: Workload) -> dict[str, Any]:
    """The demo's namespace. Pure."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": workload.namespace}}


def compute_domain(workload: Workload) -> dict[str, Any]:
    """The ComputeDomain, sized for every worker. Pure."""
    return {
        "apiVersion": names.GROUP_VERSION,
        "kind": names.COMPUTE_DOMAIN_KIND,
        "metadata": {"name": workload.domain, "namespace": workload.namespace},
        "spec": {
            "numNodes": workload.workers,
            "channel": {"resourceClaimTemplate": {"name": workload.template}},
        },
    }


def worker_deployment(workload: Workload) -> dict[str, Any]:
    """The workers: one per node, each with a channel claim of the domain. Pure."""
    labels = workload.selector
    pod_spec = {
        "terminationGracePeriodSeconds": 5,
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": dict(labels)},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
        "containers": [
            {
                "name": WORKER_CONTAINER,
                "image": "python",
                "command": ["python3", "-c", WORKER_SCRIPT],
                "resources": {"claims": [{"name": "imex-channel"}]},
            }
        ],
        "resourceClaims": [
            {"name": "imex-channel", "resourceClaimTemplateName": workload.template}
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": workload.deployment, "namespace": workload.namespace},
        "spec": {
            "replicas": workload.workers,
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
        },
    }
