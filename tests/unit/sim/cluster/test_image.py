"""The simulated image: its programs, its PATH, and a trust store holding only the cluster's CA."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from computedomain_sim.apiserver.tls import serving_cert
from computedomain_sim.cluster import cluster
from computedomain_sim.cluster.cluster import PROGRAMS, image_for


def test_the_trust_store_is_the_cluster_ca_or_empty(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    assert image_for("/imex", ca).env["SSL_CERT_FILE"] == str(ca)
    assert image_for("/imex").env["SSL_CERT_FILE"] == os.devnull
    assert image_for("/imex").env["PATH"].split(":")[0] == "/imex"


def test_a_program_in_the_image_trusts_exactly_the_cluster_ca(tmp_path: Path) -> None:
    cert = serving_cert(tmp_path, "127.0.0.1")
    for trusted, expected in ((cert.cert_path, 1), (None, 0)):
        env = {**os.environ, **image_for(None, trusted).env}
        counted = subprocess.run(
            [sys.executable, "-c", "import ssl; print(len(ssl.create_default_context()"
             ".get_ca_certs()))"],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert int(counted.stdout) == expected


def test_the_programs_are_the_checkouts_launchers_run_by_this_interpreter() -> None:
    image = image_for(None)
    launchers = Path(cluster.__file__).resolve().parents[3] / "bin"
    assert image.commands == {name: str(launchers / name) for name in PROGRAMS}
    assert image.env["COMPUTEDOMAIN_PYTHON"] == sys.executable
    assert str(launchers) in image.env["PATH"].split(":")  # upstream's names resolve too


def test_without_a_checkout_the_programs_are_the_console_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster, "LAUNCHERS", tmp_path / "bin")  # an installed wheel: none
    image = image_for(None)
    venv_bin = Path(sys.executable).parent
    assert image.commands["cd-imex-daemon"] == str(venv_bin / "cd-imex-daemon")
    assert "COMPUTEDOMAIN_PYTHON" not in image.env
