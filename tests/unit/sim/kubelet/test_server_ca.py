"""A pod of a simulated cluster that serves HTTPS trusts its CA: the pod's kubeconfig carries it
as ``certificate-authority-data`` and a projected ``kube-root-ca.crt`` item gets it as
``ca.crt``, as the in-cluster configuration expects."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from computedomain_sim.kubelet.tokens import kubeconfig_text
from computedomain_sim.kubelet.volumes import prepare_pod_files

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_the_pod_kubeconfig_trusts_the_ca_of_an_https_server() -> None:
    config = yaml.safe_load(kubeconfig_text("https://127.0.0.1:6443", "tok", "ns", CA))
    cluster = config["clusters"][0]["cluster"]
    assert base64.b64decode(cluster["certificate-authority-data"]) == CA
    plain = yaml.safe_load(kubeconfig_text("http://127.0.0.1:6443", "tok", "ns"))
    assert "certificate-authority-data" not in plain["clusters"][0]["cluster"]


def test_a_projected_service_account_volume_gets_token_ca_and_namespace(tmp_path: Path) -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {"fieldPath": "metadata.namespace"},
                                        }
                                    ]
                                }
                            },
                        ]
                    },
                }
            ]
        },
    }
    target = tmp_path / "sa"
    prepare_pod_files(
        pod, tmp_path / "pod", "127.0.0.5", {"kube-api-access": target}, token="t", ca_pem=CA
    )
    assert (target / "token").read_text() == "t"
    assert (target / "ca.crt").read_bytes() == CA
    assert (target / "namespace").read_text() == "ns"
