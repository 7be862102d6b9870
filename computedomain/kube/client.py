"""Client factory: where to find the API server and with which credentials.

Each program's wiring builds a :class:`ClientConfig` from its flags (``--kubeconfig`` /
``KUBECONFIG``, ``--kube-api-qps``, ``--kube-api-burst``) and calls :func:`connect` once; the
resulting :class:`~computedomain.kube.rest.Api` is passed to every component.

Sources, first match wins:

1. an explicit ``url`` (plus an optional bearer ``token``) — how tests and the embedded cluster
   connect;
2. a kubeconfig file — loaded by the official client's ``kubernetes.aio.config`` (contexts,
   client certificates, exec plugins, token refresh);
3. in-cluster configuration — the pod's service-account token and CA, again via
   ``kubernetes.aio.config`` (which re-reads the rotated token).

Nothing found raises :class:`ClientConfigError` saying what was looked for.

For a plain ``http://`` server (the embedded API server, a local proxy) the client is built
without a TLS context: the official REST client creates one in its constructor whatever the
scheme, and loading the system CA store is costly enough that in-process fleets of clients
(hollow daemons, benchmarks) would pay for it hundreds of times over.
"""

from __future__ import annotations

import asyncio
import os
import urllib.parse
import urllib.request

import aiohttp
import attrs
from kubernetes.aio import config as aio_config
from kubernetes.aio.client.configuration import Configuration
from kubernetes.aio.client.rest import RESTClientObject

from computedomain.kube.rest import Api
from computedomain.runtime.clock import Clock

_SERVICE_HOST = "KUBERNETES_SERVICE_HOST"
_SERVICE_PORT = "KUBERNETES_SERVICE_PORT"


class ClientConfigError(ValueError):
    """No usable API server configuration (missing, unreadable or invalid)."""


@attrs.frozen
class ClientConfig:
    """How to reach the API server and how hard to use it.

    ``qps``/``burst`` size each client set's token bucket (docs/rate-limits.md); ``qps <= 0``
    disables client-side rate limiting. ``timeout_seconds`` bounds each ordinary
    request (not watches). ``context`` picks a kubeconfig context (default: current).
    ``ca_file``/``insecure_skip_tls_verify`` apply to an explicit https ``url`` only.
    """

    kubeconfig: str | None = None
    url: str | None = None
    token: str | None = None
    qps: float = 5.0
    burst: int = 10
    user_agent: str = "computedomain"
    timeout_seconds: float = 30.0
    context: str | None = None
    field_manager: str | None = None
    ca_file: str | None = None
    insecure_skip_tls_verify: bool = False


async def load_configuration(config: ClientConfig) -> Configuration:
    """The official client's Configuration for ``config``; raises ClientConfigError."""
    configuration = Configuration()
    if config.url:
        configuration.host = config.url.rstrip("/")
        if config.token:
            configuration.api_key = {"BearerToken": config.token}
            configuration.api_key_prefix = {"BearerToken": "Bearer"}
        if config.ca_file:
            configuration.ssl_ca_cert = config.ca_file
        configuration.verify_ssl = not config.insecure_skip_tls_verify
    elif config.kubeconfig:
        if not await asyncio.to_thread(os.path.isfile, config.kubeconfig):
            msg = f"kubeconfig file {config.kubeconfig!r} does not exist"
            raise ClientConfigError(msg)
        try:
            await aio_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=config.kubeconfig,
                context=config.context,
                client_configuration=configuration,
                persist_config=False,
            )
        except Exception as exc:  # the loader raises YAML, key and type errors alike
            msg = f"cannot use kubeconfig {config.kubeconfig!r}: {exc}"
            raise ClientConfigError(msg) from exc
    elif os.environ.get(_SERVICE_HOST) and os.environ.get(_SERVICE_PORT):
        try:
            aio_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except (aio_config.ConfigException, OSError) as exc:
            msg = f"in-cluster configuration failed: {exc}"
            raise ClientConfigError(msg) from exc
    else:
        msg = (
            "no API server configured: give a kubeconfig file (--kubeconfig / KUBECONFIG) or "
            f"an explicit URL, or run inside a pod ({_SERVICE_HOST} and {_SERVICE_PORT} are "
            "not set)"
        )
        raise ClientConfigError(msg)
    # Retries and rate limits are ours (rest.Api); the client's own would double them.
    configuration.retries = None
    configuration.client_go_retries = False
    configuration.connection_pool_maxsize = 0  # unlimited: every informer holds a watch open
    if not uses_env_proxy(str(configuration.host)):
        # The client's session trusts the environment, which makes aiohttp look up ~/.netrc
        # and the proxy variables in a worker thread on every request (2.5x the cost of a
        # request to a local server). Without a proxy for this host neither can matter.
        configuration.client_session_kwargs = {"trust_env": False}
    return configuration


def uses_env_proxy(url: str) -> bool:
    """Whether HTTP(S)_PROXY/NO_PROXY in the environment route requests to ``url`` via a proxy."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    if parts.scheme not in proxies or not parts.hostname:
        return False
    return not urllib.request.proxy_bypass(parts.hostname)


class _PlainRESTClient(RESTClientObject):
    """The official REST client for an ``http://`` server: the same session, connector limits,
    proxy and request code, only no TLS context (nothing would use it)."""

    def __init__(self, configuration: Configuration) -> None:
        # RESTClientObject.__init__ is not called: its only work beyond these assignments is
        # building the TLS context. Retries stay off (rest.Api does its own).
        self.configuration = configuration
        self.maxsize = configuration.connection_pool_maxsize
        self.ssl_context = None  # type: ignore[assignment]  # never read for http
        self.proxy = configuration.proxy
        self.proxy_headers = configuration.proxy_headers
        self._effective_retry_options = None
        self.pool_manager = None
        self.retry_client = None

    def _create_connector(self) -> aiohttp.TCPConnector:
        return aiohttp.TCPConnector(limit=self.maxsize, ssl=False)


def transport(configuration: Configuration) -> RESTClientObject:
    """The official REST client for ``configuration``; for ``http://`` hosts one without a
    TLS context (see the module docstring). Pure construction: no I/O, no request."""
    if urllib.parse.urlsplit(str(configuration.host)).scheme == "http" and not (
        configuration.proxy or configuration.retries
    ):
        return _PlainRESTClient(configuration)
    return RESTClientObject(configuration)


async def connect(config: ClientConfig, *, clock: Clock | None = None) -> Api:
    """An :class:`Api` for ``config``. Raises ClientConfigError; sends no request."""
    configuration = await load_configuration(config)
    return Api(
        transport(configuration),
        configuration,
        qps=config.qps,
        burst=config.burst,
        user_agent=config.user_agent,
        timeout_seconds=config.timeout_seconds,
        field_manager=config.field_manager,
        clock=clock,
    )
