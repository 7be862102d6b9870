"""The embedded Kubernetes API server (aiohttp), faithful where our components, kubectl and
client-go depend on it.

Public entry points: :class:`.server.EmbeddedApiServer` (asyncio; ``start``/``stop``, ``url``,
``admin_token``, ``write_kubeconfig``, ``install_crds``, ``start_in_thread``),
:class:`.server.ServerThread` and :mod:`.testing` (sync helpers and what ``tests/conftest.py``
builds its ``apiserver``/``api_client``/``namespace`` fixtures on), and the CLI
``computedomain sim apiserver``.

A request flows through the pipeline of :mod:`.pipeline` — error boundary → classification
(:mod:`.requestinfo`) → *extra stages* (the fault-injection seam: ``EmbeddedApiServer(stages=
[...])``) → authentication → authorization (:mod:`.security` over :mod:`.authn`/:mod:`.rbac`) —
into :mod:`.app`, which answers discovery (:mod:`.discovery`), OpenAPI (:mod:`.openapi`) and
health itself and hands resources to :mod:`.rest`. Reads are :mod:`.reads` (+ :mod:`.tables`),
writes :mod:`.writes` (+ :mod:`.patching`/:mod:`.strategic`), :mod:`.deletion` and
:mod:`.subresources`; every write passes :mod:`.admission` (:mod:`.defaults`,
:mod:`.validation`, CRD schemas of :mod:`.schema`) and lands in :mod:`.store`, whose listeners
fan it out to watches (:mod:`.watch`), keep CRDs served (:mod:`.crds`), drive the garbage
collector and namespace controller (:mod:`.gc`) and persist it (:mod:`.persistence`).
The resource table is :mod:`.registry` with the built-ins of :mod:`.kinds`; bodies and errors
are :mod:`.wire`, :mod:`.protobuf` and :mod:`.status`; version views are :mod:`.conversion`.
"""
