"""The rendered objects, field for field against the contract
(docs/compatibility.md#objects-the-controller-renders)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from computedomain.api import convert, featuregates
from computedomain.controller import rendering
from computedomain.controller.config import DaemonSettings
from tests.unit.controller import builders

UID = "0f1e2d3c-aaaa-bbbb-cccc-000000000001"
LABEL = "resource.nvidia.com/computeDomain"
GATES = featuregates.parse("").render()


def _cd(**kwargs: Any) -> Any:
    return convert.compute_domain(builders.domain(uid=UID, **kwargs))


def _probe(timings: dict[str, int]) -> dict[str, Any]:
    return {
        "exec": {"command": ["cd-imex-daemon", "-v", "$(LOG_VERBOSITY)", "check"]},
        **timings,
    }


EXPECTED_DAEMON_SET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {
        "name": f"computedomain-daemon-{UID}",
        "namespace": "driver",
        "labels": {LABEL: UID},
        "finalizers": [LABEL],
    },
    "spec": {
        "selector": {"matchLabels": {LABEL: UID}},
        "template": {
            "metadata": {"labels": {LABEL: UID}},
            "spec": {
                "serviceAccountName": "compute-domain-daemon-service-account",
                "nodeSelector": {LABEL: UID},
                "containers": [
                    {
                        "name": "compute-domain-daemon",
                        "image": "registry.example/cd:1",
                        "command": ["cd-imex-daemon", "-v", "$(LOG_VERBOSITY)", "run"],
                        "env": [
                            {"name": "LOG_VERBOSITY", "value": "4"},
                            {"name": "MAX_NODES_PER_IMEX_DOMAIN", "value": "18"},
                            {
                                "name": "NODE_NAME",
                                "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                            },
                            {
                                "name": "POD_IP",
                                "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
                            },
                            {
                                "name": "POD_UID",
                                "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}},
                            },
                            {
                                "name": "POD_NAME",
                                "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                            },
                            {
                                "name": "POD_NAMESPACE",
                                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                            },
                            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
                            {"name": "FEATURE_GATES", "value": GATES},
                        ],
                        "resources": {"claims": [{"name": "compute-domain-daemon"}]},
                        "startupProbe": _probe(
                            {
                                "initialDelaySeconds": 0,
                                "periodSeconds": 1,
                                "timeoutSeconds": 10,
                                "failureThreshold": 1200,
                                "successThreshold": 1,
                            }
                        ),
                        "livenessProbe": _probe(
                            {
                                "periodSeconds": 60,
                                "timeoutSeconds": 10,
                                "failureThreshold": 20,
                                "successThreshold": 1,
                            }
                        ),
                        "readinessProbe": _probe(
                            {
                                "periodSeconds": 10,
                                "timeoutSeconds": 10,
                                "failureThreshold": 1,
                                "successThreshold": 1,
                            }
                        ),
                    }
                ],
                "tolerations": [
                    {"operator": "Exists", "effect": "NoSchedule"},
                    {"operator": "Exists", "effect": "NoExecute"},
                    {"operator": "Exists", "effect": "PreferNoSchedule"},
                ],
                "dnsConfig": {"options": [{"name": "ndots", "value": "1"}]},
                "resourceClaims": [
                    {
                        "name": "compute-domain-daemon",
                        "resourceClaimTemplateName": f"computedomain-daemon-{UID}",
                    }
                ],
            },
        },
    },
}


def test_daemon_set_matches_the_contract_field_for_field() -> None:
    assert rendering.daemon_set(_cd(), builders.SETTINGS) == EXPECTED_DAEMON_SET


def test_feature_gates_are_every_gate_sorted_with_a_trailing_comma() -> None:
    assert GATES.startswith("AllAlpha=false,AllBeta=false,ComputeDomainCliques=true,")
    assert GATES.endswith(",")
    names = [item.split("=")[0] for item in GATES.rstrip(",").split(",")]
    assert names == sorted(names)
    assert set(names) == set(featuregates.KNOWN_GATES)


def _pod_spec(settings: DaemonSettings) -> dict[str, Any]:
    spec: dict[str, Any] = rendering.daemon_set(_cd(), settings)["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize(
    ("change", "path", "expected"),
    [
        ({"image_pull_secrets": ("a", "b")}, ("imagePullSecrets",), [{"name": "a"}, {"name": "b"}]),
        (
            {"priority_class_name": "system-node-critical"},
            ("priorityClassName",),
            "system-node-critical",
        ),
        (
            {"resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
            ("containers", 0, "resources"),
            {
                "requests": {"cpu": "100m", "memory": "64Mi"},
                "claims": [{"name": "compute-domain-daemon"}],
            },
        ),
        (
            {"resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}},
            ("containers", 0, "resources"),
            {
                "requests": {"cpu": "1"},
                "limits": {"memory": "1Gi"},
                "claims": [{"name": "compute-domain-daemon"}],
            },
        ),
        (
            {"command": "/opt/bin/daemon"},
            ("containers", 0, "command"),
            ["/opt/bin/daemon", "-v", "$(LOG_VERBOSITY)", "run"],
        ),
        (
            {"command": "/opt/bin/daemon"},
            ("containers", 0, "readinessProbe", "exec", "command"),
            ["/opt/bin/daemon", "-v", "$(LOG_VERBOSITY)", "check"],
        ),
        (
            {"max_nodes_per_imex_domain": 4},
            ("containers", 0, "env", 1),
            {"name": "MAX_NODES_PER_IMEX_DOMAIN", "value": "4"},
        ),
        (
            {"log_verbosity": 7},
            ("containers", 0, "env", 0),
            {"name": "LOG_VERBOSITY", "value": "7"},
        ),
        (
            {"feature_gates": featuregates.parse("ComputeDomainCliques=false").render()},
            ("containers", 0, "env", 8, "value"),
            featuregates.parse("ComputeDomainCliques=false").render(),
        ),
    ],
    ids=[
        "pull-secrets",
        "priority-class",
        "requests",
        "requests-and-limits",
        "daemon-command",
        "probe-command",
        "max-nodes",
        "verbosity",
        "gates",
    ],
)
def test_daemon_set_settings(change: dict[str, Any], path: tuple[Any, ...], expected: Any) -> None:
    value: Any = _pod_spec(attrs.evolve(builders.SETTINGS, **change))
    for step in path:
        value = value[step]
    assert value == expected


def test_no_optional_fields_by_default() -> None:
    spec = _pod_spec(builders.SETTINGS)
    for absent in (
        "imagePullSecrets",
        "priorityClassName",
        "affinity",
        "securityContext",
        "hostNetwork",
    ):
        assert absent not in spec
    assert "ownerReferences" not in rendering.daemon_set(_cd(), builders.SETTINGS)["metadata"]
    env = {e["name"] for e in spec["containers"][0]["env"]}
    assert not env & {"INDEX_POLICY", "DNS_NAME_POLICY", "CD_DNS_SUFFIX"}


def test_policies_and_their_settings_follow_the_upstream_env_in_order() -> None:
    settings = attrs.evolve(
        builders.SETTINGS,
        index_policy="stable-hash",
        dns_name_policy="suffix",
        policy_env=(("CD_DNS_SUFFIX", "imex.example.com"), ("A", "1")),
    )
    env = _pod_spec(settings)["containers"][0]["env"]
    upstream = _pod_spec(builders.SETTINGS)["containers"][0]["env"]
    assert env[: len(upstream)] == upstream
    assert env[len(upstream) :] == [
        {"name": "INDEX_POLICY", "value": "stable-hash"},
        {"name": "DNS_NAME_POLICY", "value": "suffix"},
        {"name": "CD_DNS_SUFFIX", "value": "imex.example.com"},
        {"name": "A", "value": "1"},
    ]


def test_a_policy_is_rendered_only_when_set() -> None:
    env = _pod_spec(attrs.evolve(builders.SETTINGS, dns_name_policy="suffix"))["containers"][0]
    assert [e["name"] for e in env["env"] if "POLICY" in e["name"]] == ["DNS_NAME_POLICY"]


def test_daemon_claim_template_matches_the_contract() -> None:
    assert rendering.daemon_claim_template(_cd(), builders.SETTINGS) == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": f"computedomain-daemon-{UID}",
            "namespace": "driver",
            "labels": {LABEL: UID, "resource.nvidia.com/computeDomainTarget": "Daemon"},
            "finalizers": [LABEL],
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "daemon",
                            "exactly": {"deviceClassName": "compute-domain-daemon.nvidia.com"},
                        }
                    ],
                    "config": [
                        {
                            "requests": ["daemon"],
                            "opaque": {
                                "driver": "compute-domain.nvidia.com",
                                "parameters": {
                                    "apiVersion": "resource.nvidia.com/v1beta1",
                                    "kind": "ComputeDomainDaemonConfig",
                                    "domainID": UID,
                                },
                            },
                        }
                    ],
                }
            }
        },
    }


@pytest.mark.parametrize(
    ("mode", "rendered"),
    [("Single", "Single"), ("All", "All"), (None, "Single")],
    ids=["single", "all", "default"],
)
def test_workload_claim_template_matches_the_contract(mode: str | None, rendered: str) -> None:
    cd = _cd(namespace="team-a", template="my-channel", allocation_mode=mode)
    assert rendering.workload_claim_template(cd) == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": "my-channel",
            "namespace": "team-a",
            "labels": {LABEL: UID, "resource.nvidia.com/computeDomainTarget": "Workload"},
            "finalizers": [LABEL],
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "channel",
                            "exactly": {
                                "deviceClassName": "compute-domain-default-channel.nvidia.com"
                            },
                        }
                    ],
                    "config": [
                        {
                            "requests": ["channel"],
                            "opaque": {
                                "driver": "compute-domain.nvidia.com",
                                "parameters": {
                                    "apiVersion": "resource.nvidia.com/v1beta1",
                                    "kind": "ComputeDomainChannelConfig",
                                    "domainID": UID,
                                    "allocationMode": rendered,
                                },
                            },
                        }
                    ],
                }
            }
        },
    }


def test_rendered_opaque_configs_decode_strictly() -> None:
    from computedomain.api import configs

    cd = _cd()
    for body in (
        rendering.workload_claim_template(cd),
        rendering.daemon_claim_template(cd, builders.SETTINGS),
    ):
        params = body["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]
        assert configs.decode(params).domain_id == UID
