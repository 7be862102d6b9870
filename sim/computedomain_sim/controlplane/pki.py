"""The certificates of a real control plane: one cluster CA, the API server's serving
certificate, client certificates (admin, scheduler, controller manager, one per node) and the
service-account signing key pair.

Called by :mod:`.kube`. kube-apiserver authenticates client certificates by their subject:
the common name is the user, each organization a group (``system:masters`` for the admin,
``system:nodes`` for a kubelet's ``system:node:<name>``), so a certificate is all an identity
needs. Everything is made with the ``openssl`` command (as the embedded server's certificate
is), EC P-256, valid ten years; keys are written with mode 0600 and every file atomically.
Raises :class:`PkiError`.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import attrs

__all__ = ["Authority", "Credential", "PkiError"]

_DAYS = "3650"
_CURVE = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


class PkiError(RuntimeError):
    """A key or certificate could not be made."""


@attrs.frozen
class Credential:
    """A certificate and its key, as files."""

    cert: Path
    key: Path


@attrs.frozen
class Authority:
    """The cluster CA in ``directory`` (``ca.crt``, ``ca.key``) and what it signs there."""

    directory: Path

    @property
    def ca(self) -> Credential:
        return Credential(self.directory / "ca.crt", self.directory / "ca.key")

    @property
    def ca_pem(self) -> bytes:
        return self.ca.cert.read_bytes()

    def create(self) -> None:
        """Make the CA (once: an existing one is kept, so kubeconfigs stay valid)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        ca = self.ca
        if ca.cert.exists() and ca.key.exists():
            return
        _openssl(
            "req", "-x509", *_CURVE, "-days", _DAYS, "-subj", "/CN=computedomain-sim-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,digitalSignature,keyCertSign,cRLSign",
            "-keyout", _tmp(ca.key), "-out", _tmp(ca.cert),
        )  # fmt: skip
        _commit(ca)

    def issue(
        self,
        name: str,
        user: str,
        groups: Sequence[str] = (),
        *,
        server_names: Sequence[str] = (),
    ) -> Credential:
        """A certificate ``<name>.crt`` for ``user`` in ``groups`` signed by the CA: a client
        certificate, and with ``server_names`` (``IP:...``/``DNS:...``) a serving one too. An
        existing one is kept."""
        credential = Credential(self.directory / f"{name}.crt", self.directory / f"{name}.key")
        if credential.cert.exists() and credential.key.exists():
            return credential
        subject = "".join(f"/O={g}" for g in groups) + f"/CN={user}"
        usage = "serverAuth,clientAuth" if server_names else "clientAuth"
        extensions = [
            "-addext", "basicConstraints=critical,CA:FALSE",
            "-addext", "keyUsage=critical,digitalSignature",
            "-addext", f"extendedKeyUsage={usage}",
        ]  # fmt: skip
        if server_names:
            extensions += ["-addext", "subjectAltName=" + ",".join(server_names)]
        ca = self.ca
        _openssl(
            "req", "-x509", *_CURVE, "-days", _DAYS, "-subj", subject, *extensions,
            "-CA", str(ca.cert), "-CAkey", str(ca.key),
            "-keyout", _tmp(credential.key), "-out", _tmp(credential.cert),
        )  # fmt: skip
        _commit(credential)
        return credential

    def signing_key(self, name: str) -> Credential:
        """A key pair for signing service-account tokens: ``<name>.key`` and its public key
        ``<name>.pub`` (in :attr:`Credential.cert`). An existing one is kept."""
        pair = Credential(self.directory / f"{name}.pub", self.directory / f"{name}.key")
        if pair.cert.exists() and pair.key.exists():
            return pair
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-out", _tmp(pair.key))  # fmt: skip
        _openssl("pkey", "-in", _tmp(pair.key), "-pubout", "-out", _tmp(pair.cert))
        _commit(pair)
        return pair


def _tmp(path: Path) -> str:
    return str(path.with_name(path.name + ".tmp"))


def _commit(credential: Credential) -> None:
    """Move the finished ``.tmp`` files into place, the key first (mode 0600)."""
    key = Path(_tmp(credential.key))
    key.chmod(0o600)
    key.replace(credential.key)
    Path(_tmp(credential.cert)).replace(credential.cert)


def _openssl(*args: str) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        msg = "the real control plane needs the openssl command for its certificates"
        raise PkiError(msg)
    proc = subprocess.run([openssl, *args], capture_output=True, text=True, check=False, timeout=60)
    if proc.returncode != 0:
        msg = f"openssl {args[0]} failed: {proc.stderr.strip()}"
        raise PkiError(msg)
