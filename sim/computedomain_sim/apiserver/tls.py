"""Serving certificate for HTTPS (``EmbeddedApiServer(tls=True)``, ``--tls``).

kubectl and every client-go program only send bearer tokens over TLS (clientcmd drops the
credentials of a plain-HTTP cluster), so a server that enforces authentication (``--rbac``)
needs HTTPS for them. The certificate is self-signed for ``127.0.0.1``, ``::1``,
``localhost`` and the listen host, and is its own CA in the kubeconfig
(``certificate-authority-data``). It is made with the ``openssl`` command (present on every
supported machine), kept in the data directory when there is one (so kubeconfigs stay valid
across restarts), and written atomically with mode 0600 for the key.

Called by :class:`.server.EmbeddedApiServer`; raises :class:`TlsError`.
"""

from __future__ import annotations

import ipaddress
import shutil
import ssl
import subprocess
import tempfile
from pathlib import Path

import attrs


class TlsError(RuntimeError):
    """The serving certificate could not be made or loaded."""


@attrs.frozen
class ServingCert:
    cert_pem: bytes
    key_path: Path
    cert_path: Path

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.cert_path, self.key_path)
        return ctx


def _alt_names(host: str) -> str:
    names = {"DNS:localhost", "IP:127.0.0.1", "IP:::1"}
    try:
        names.add(f"IP:{ipaddress.ip_address(host)}")
    except ValueError:
        if host:
            names.add(f"DNS:{host}")
    return ",".join(sorted(names))


def serving_cert(directory: Path | None, host: str) -> ServingCert:
    """The certificate in ``directory`` (made there if absent), or a fresh one in a private
    temporary directory. Raises :class:`TlsError`."""
    if directory is None:
        directory = Path(tempfile.mkdtemp(prefix="computedomain-tls-"))
    cert, key = directory / "serving.crt", directory / "serving.key"
    if not (cert.exists() and key.exists()):
        _make(cert, key, host)
    try:
        pem = cert.read_bytes()
        ssl.create_default_context().load_verify_locations(cadata=pem.decode())
    except (OSError, ssl.SSLError, UnicodeDecodeError) as exc:
        msg = f"cannot load the serving certificate {cert}: {exc}; remove it to make a new one"
        raise TlsError(msg) from exc
    return ServingCert(pem, key, cert)


def _make(cert: Path, key: Path, host: str) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        msg = "TLS needs the openssl command to make a serving certificate; install openssl"
        raise TlsError(msg)
    tmp_cert, tmp_key = cert.with_name(cert.name + ".tmp"), key.with_name(key.name + ".tmp")
    cmd = [
        openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-days", "3650", "-subj", "/CN=computedomain-sim-apiserver",
        "-addext", f"subjectAltName={_alt_names(host)}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
        "-addext", "extendedKeyUsage=serverAuth",
        "-keyout", str(tmp_key), "-out", str(tmp_cert),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
    if proc.returncode != 0:
        msg = f"openssl could not make a serving certificate: {proc.stderr.strip()}"
        raise TlsError(msg)
    tmp_key.chmod(0o600)
    tmp_key.replace(key)
    tmp_cert.replace(cert)
