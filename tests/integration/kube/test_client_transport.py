"""connect(): a plain-http server gets a client without a TLS context, and it still works."""

from __future__ import annotations

import ssl

from computedomain.kube import resources
from computedomain.kube.client import ClientConfig, connect
from computedomain_sim.apiserver import testing


async def test_http_client_has_no_tls_context_and_serves_requests(
    apiserver: testing.RunningServer,
) -> None:
    assert apiserver.url.startswith("http://")
    api = await connect(ClientConfig(url=apiserver.url, token=apiserver.token, qps=0))
    try:
        assert api.transport.ssl_context is None
        created = await api.create(
            resources.NAMESPACES, {"metadata": {"name": "plain-http-client"}}
        )
        got = await api.get(resources.NAMESPACES, "plain-http-client")
        assert got["metadata"]["uid"] == created["metadata"]["uid"]
        # Watches use the same session: the namespace arrives as ADDED.
        stream = api.watch(
            resources.NAMESPACES,
            resource_version="0",
            field_selector="metadata.name=plain-http-client",
            timeout_seconds=5,
        )
        first = await anext(stream)
        await stream.aclose()
        assert (first.type, first.object["metadata"]["name"]) == ("ADDED", "plain-http-client")
    finally:
        await api.close()


async def test_https_client_keeps_the_official_tls_context() -> None:
    api = await connect(
        ClientConfig(url="https://127.0.0.1:1", token="t", insecure_skip_tls_verify=True)
    )
    try:
        context = api.transport.ssl_context
        assert isinstance(context, ssl.SSLContext)
        assert context.verify_mode == ssl.CERT_NONE
    finally:
        await api.close()
