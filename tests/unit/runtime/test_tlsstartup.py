"""Start-up imports that read the trust store on first use: what a connection trusts is what it
would have trusted, the bundle is not read until then, and nothing changes outside the block."""

from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from computedomain.runtime import tlsstartup
from computedomain_sim.apiserver import tls

HAS_DEFAULT_TRUST = ssl.create_default_context().cert_store_stats()["x509_ca"] > 0


def test_a_context_made_inside_is_deferred_and_nothing_is_patched_after() -> None:
    with tlsstartup.deferred():
        assert "set_default_verify_paths" in vars(ssl.SSLContext)
        verified = ssl.create_default_context()
        bare = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # never asked for the defaults
    assert "set_default_verify_paths" not in vars(ssl.SSLContext)
    assert type(verified) is tlsstartup.DeferredTrustContext
    assert type(bare) is ssl.SSLContext
    assert isinstance(verified, ssl.SSLContext)
    assert verified.verify_mode == ssl.CERT_REQUIRED
    assert verified.check_hostname
    assert type(ssl.create_default_context()) is ssl.SSLContext


def test_first_use_loads_exactly_the_default_trust() -> None:
    with tlsstartup.deferred():
        deferred = ssl.create_default_context()
    expected = ssl.create_default_context()
    assert deferred.get_ca_certs() == expected.get_ca_certs()
    assert deferred.cert_store_stats() == expected.cert_store_stats()
    assert type(deferred) is ssl.SSLContext


def test_nested_blocks_leave_nothing_patched() -> None:
    with tlsstartup.deferred():
        with tlsstartup.deferred():
            inner = ssl.create_default_context()
        assert "set_default_verify_paths" in vars(ssl.SSLContext)
    assert "set_default_verify_paths" not in vars(ssl.SSLContext)
    assert type(inner) is tlsstartup.DeferredTrustContext


def test_a_subclass_of_someone_else_loads_at_once() -> None:
    class Theirs(ssl.SSLContext):
        pass

    with tlsstartup.deferred():
        theirs = Theirs(ssl.PROTOCOL_TLS_CLIENT)
        theirs.load_default_certs()
    assert type(theirs) is Theirs
    assert theirs.cert_store_stats() == ssl.create_default_context().cert_store_stats()


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> tls.ServingCert:
    try:
        return tls.serving_cert(tmp_path_factory.mktemp("tls"), "127.0.0.1")
    except tls.TlsError as exc:
        pytest.skip(str(exc))


async def _get(serving: tls.ServingCert, context: ssl.SSLContext) -> str:
    app = web.Application()

    async def hello(_: web.Request) -> web.Response:
        return web.Response(text="hello")

    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=serving.context())
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"https://127.0.0.1:{port}/", ssl=context) as response,
        ):
            return await response.text()
    finally:
        await runner.cleanup()


def test_a_deferred_context_verifies_a_server_it_was_told_to_trust(
    serving: tls.ServingCert,
) -> None:
    with tlsstartup.deferred():
        context = ssl.create_default_context()
    context.load_verify_locations(cadata=serving.cert_pem.decode())
    assert asyncio.run(_get(serving, context)) == "hello"
    assert type(context) is ssl.SSLContext  # the handshake loaded the defaults as well


def test_a_deferred_context_still_rejects_an_unknown_server(serving: tls.ServingCert) -> None:
    with tlsstartup.deferred():
        context = ssl.create_default_context()
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        asyncio.run(_get(serving, context))


@pytest.mark.skipif(not HAS_DEFAULT_TRUST, reason="this machine has no default trust store")
def test_importing_aiohttp_inside_reads_no_bundle_until_its_contexts_are_used() -> None:
    program = """
import ssl
from computedomain.runtime import tlsstartup
with tlsstartup.deferred():
    import aiohttp.connector as connector
contexts = (connector._SSL_CONTEXT_VERIFIED, connector._SSL_CONTEXT_UNVERIFIED)
print(*(type(c).__name__ for c in contexts))
print(contexts[0].cert_store_stats() == ssl.create_default_context().cert_store_stats())
"""
    env = {**os.environ, "PYTHONPATH": str(Path(tlsstartup.__file__).parents[2])}
    out = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, env=env
    ).stdout.split("\n")
    assert out[0] == "DeferredTrustContext DeferredTrustContext"
    assert out[1] == "True"
