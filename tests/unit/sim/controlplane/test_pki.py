"""The real control plane's certificates: who each one names, that the cluster CA signed it,
and that a second start keeps what the first made (kubeconfigs stay valid)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from computedomain_sim.controlplane import pki


def _text(cert: Path) -> str:
    return subprocess.run(
        ["openssl", "x509", "-in", str(cert), "-noout", "-text"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _verified(authority: pki.Authority, cert: Path) -> bool:
    answer = subprocess.run(
        ["openssl", "verify", "-CAfile", str(authority.ca.cert), str(cert)],
        capture_output=True,
        text=True,
        check=False,
    )
    return answer.returncode == 0


@pytest.fixture
def authority(tmp_path: Path) -> pki.Authority:
    made = pki.Authority(tmp_path / "pki")
    made.create()
    return made


def test_a_node_certificate_names_the_node_user_and_group(authority: pki.Authority) -> None:
    node = authority.issue("node-a", "system:node:a", ["system:nodes"])
    text = _text(node.cert)
    assert "O = system:nodes, CN = system:node:a" in text
    assert "TLS Web Client Authentication" in text
    assert "TLS Web Server Authentication" not in text
    assert _verified(authority, node.cert)
    assert node.key.stat().st_mode & 0o777 == 0o600


def test_a_serving_certificate_carries_its_names(authority: pki.Authority) -> None:
    serving = authority.issue("serving", "kube-apiserver", server_names=["IP:127.9.0.254"])
    text = _text(serving.cert)
    assert "IP Address:127.9.0.254" in text
    assert "TLS Web Server Authentication" in text
    assert _verified(authority, serving.cert)


def test_a_certificate_of_another_authority_is_not_verified(
    authority: pki.Authority, tmp_path: Path
) -> None:
    other = pki.Authority(tmp_path / "other")
    other.create()
    stranger = other.issue("admin", "admin", ["system:masters"])
    assert not _verified(authority, stranger.cert)


def test_existing_credentials_are_kept(authority: pki.Authority) -> None:
    ca = authority.ca_pem
    first = authority.issue("admin", "admin", ["system:masters"]).cert.read_bytes()
    key = authority.signing_key("service-account")
    public = key.cert.read_bytes()
    authority.create()
    assert authority.ca_pem == ca
    assert authority.issue("admin", "admin", ["system:masters"]).cert.read_bytes() == first
    assert authority.signing_key("service-account").cert.read_bytes() == public
    assert b"PUBLIC KEY" in public
    assert key.key.stat().st_mode & 0o777 == 0o600
