"""The ComputeDomain and ComputeDomainClique ``openAPIV3Schema``s
(docs/compatibility.md#api-objects) as test data.

Written from the specification for the schema engine's tests; the project's real CRDs live in
``deployments/`` and are tested as well once present (see ``test_schema_computedomain.py``).
"""

from __future__ import annotations

from typing import Any

_STATUS_ENUM: dict[str, Any] = {
    "type": "string",
    "enum": ["Ready", "NotReady"],
    "default": "NotReady",
}

COMPUTE_DOMAIN: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["channel"],
            "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": "A computeDomain.spec is immutable"}
            ],
            "properties": {
                "numNodes": {"type": "integer", "minimum": 0, "default": 0},
                "channel": {
                    "type": "object",
                    "required": ["resourceClaimTemplate"],
                    "properties": {
                        "resourceClaimTemplate": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {"name": {"type": "string"}},
                        },
                        "allocationMode": {
                            "type": "string",
                            "enum": ["All", "Single"],
                            "default": "Single",
                        },
                    },
                },
            },
        },
        "status": {
            "type": "object",
            "required": ["status"],
            "properties": {
                "status": _STATUS_ENUM,
                "nodes": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["cliqueID", "ipAddress", "name"],
                        "properties": {
                            "cliqueID": {"type": "string"},
                            "index": {"type": "integer"},
                            "ipAddress": {"type": "string"},
                            "name": {"type": "string"},
                            "status": _STATUS_ENUM,
                        },
                    },
                },
            },
        },
    },
}

COMPUTE_DOMAIN_CLIQUE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "daemons": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["nodeName"],
            "items": {
                "type": "object",
                "required": ["cliqueID", "ipAddress", "nodeName"],
                "properties": {
                    "cliqueID": {"type": "string"},
                    "index": {"type": "integer"},
                    "ipAddress": {"type": "string"},
                    "nodeName": {"type": "string"},
                    "status": _STATUS_ENUM,
                },
            },
        },
    },
}


def compute_domain(**spec: Any) -> dict[str, Any]:
    """A ComputeDomain body as a user writes it (``spec`` keys override the defaults)."""
    body: dict[str, Any] = {
        "channel": {"resourceClaimTemplate": {"name": "imex-channel-0"}},
    }
    body.update(spec)
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "cd", "namespace": "default"},
        "spec": body,
    }
