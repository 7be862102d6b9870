"""The embedded API server's public face: :class:`EmbeddedApiServer` (asyncio) and
:class:`ServerThread` (the same server on its own event loop thread, for plain sync code).

Wires the pieces: :mod:`.store` (+ :mod:`.persistence` with ``data_dir``), the
:mod:`.registry` seeded from :mod:`.kinds`, :mod:`.watch` fan-out, :mod:`.crds` serving,
:mod:`.gc` controllers, :mod:`.security` and the aiohttp app of :mod:`.app`.

Usage::

    async with EmbeddedApiServer() as server:
        server.write_kubeconfig(tmp / "kubeconfig")
        await server.install_crds([Path("deployments/crds.yaml")])
        ...  # point the kubernetes client at server.url with server.admin_token

    with EmbeddedApiServer().start_in_thread() as thread:  # from sync code
        thread.server.url

Options: ``rbac=True`` authenticates (401 without a valid token) and authorizes every
request; ``tls=True`` serves HTTPS with a self-signed certificate written into the kubeconfig
(needed for kubectl and client-go, which send tokens only over TLS; the Python client sends
them over HTTP too); ``data_dir`` keeps objects, the resourceVersion counter, the token
signing key and the certificate across restarts; ``event_window`` is how many events per
resource a watch can resume from; ``config`` (:class:`.state.ServerConfig`) tunes bookmarks,
watch timeouts and limits; ``stages`` adds pipeline stages (see :mod:`.pipeline`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import secrets
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from aiohttp import web

from computedomain.api import jsoncodec

from . import app as app_module
from . import objects, security, status, writes
from .crds import CRD_KEY, CrdController
from .gc import Collector
from .kinds import BUILTINS
from .persistence import SqlitePersistence
from .registry import Registry
from .schema import StructuralSchema
from .state import ApiState, SchemaCompiler, ServerConfig
from .store import Entry, Store
from .tls import ServingCert, serving_cert
from .watch import WatchHub

log = logging.getLogger(__name__)
BOOT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class EmbeddedApiServer:
    """A Kubernetes API server over HTTP on ``host:port`` (``port=0``: a free port)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        data_dir: Path | None = None,
        rbac: bool = False,
        event_window: int = 10_000,
        config: ServerConfig | None = None,
        stages: Sequence[Any] = (),
        compile_schema: SchemaCompiler | None = None,
        admin_token: str | None = None,
        tls: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.rbac = rbac
        self.event_window = event_window
        self.config = config or ServerConfig()
        self.config.rbac = rbac
        self.stages = list(stages)
        self.compile_schema: SchemaCompiler = compile_schema or StructuralSchema.compile
        self.admin_token = admin_token or secrets.token_urlsafe(32)
        self.state: ApiState | None = None
        self._runner: web.ServerRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._persistence: SqlitePersistence | None = None
        self.collector: Collector | None = None
        self.url = ""
        self.tls = tls  # HTTPS; kubectl/client-go send tokens only over TLS (see tls.py)
        self.serving_cert: ServingCert | None = None

    # ----------------------------------------------------------------- lifecycle

    def build(self) -> ApiState:
        """Load or create the store and wire the controllers, without listening or starting
        tasks (``start`` does both; tests of the semantics may drive ``collector.step()``
        themselves). Raises :class:`.persistence.CorruptStoreError` for a data directory that
        cannot be read."""
        store = Store(event_window=self.event_window)
        state = ApiState(
            registry=Registry(BUILTINS),
            store=store,
            hub=WatchHub(max_pending=self.config.max_watch_pending),
            config=self.config,
            compile_schema=self.compile_schema,
        )
        self.state = state
        crds = CrdController(state)
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._persistence = SqlitePersistence(self.data_dir / "store.sqlite")
            _load(state, crds, self._persistence)
        collector = self.collector = Collector(state, crds)
        state.namespace_notify = collector.notify_namespace
        if self._persistence is not None:
            store.listeners.append(self._persistence.on_event)
        store.listeners.extend([state.hub.on_event, crds.on_event, collector.on_event])
        security.build(state, admin_token=self.admin_token, rbac=self.rbac, data_dir=self.data_dir)
        self._bootstrap(state)
        collector.prime()
        return state

    async def start(self) -> None:
        """Build the state (see :meth:`build`), start the controllers and listen."""
        state = self.build()
        assert self.collector is not None
        self._tasks.append(asyncio.create_task(self.collector.run(), name="apiserver-gc"))
        self._runner = web.ServerRunner(app_module.build(state, self.stages), handle_signals=False)
        await self._runner.setup()
        ssl_context = None
        if self.tls:
            self.serving_cert = serving_cert(self.data_dir, self.host)
            ssl_context = self.serving_cert.context()
        site = web.TCPSite(
            self._runner, self.host, self.port, reuse_address=True, ssl_context=ssl_context
        )
        await site.start()
        sockets = getattr(site._server, "sockets", None)  # the port bound for port=0
        assert sockets
        self.port = int(sockets[0].getsockname()[1])
        scheme = "https" if self.tls else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"{scheme}://{host}:{self.port}"
        log.info("embedded API server listening on %s", self.url)

    def _bootstrap(self, state: ApiState) -> None:
        ns_rt = state.registry.get("", "v1", "namespaces")
        assert ns_rt is not None
        for name in BOOT_NAMESPACES:
            if state.store.get(ns_rt.storage_key, name) is None:
                writes.create(state, ns_rt, "", {"metadata": {"name": name}})

    async def stop(self) -> None:
        """Stop listening, end watches and controllers, close the store; idempotent."""
        if self.state is not None:
            self.state.stopping.set()
            self.state.hub.close_all()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._persistence is not None:
            self._persistence.close()
            self._persistence = None

    async def __aenter__(self) -> EmbeddedApiServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # ----------------------------------------------------------------- helpers

    def write_kubeconfig(
        self, path: Path, *, token: str | None = None, user: str = "admin"
    ) -> Path:
        """Write a kubeconfig for ``url`` with ``token`` (default: the admin token)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "computedomain-sim", "cluster": self._cluster_entry()}],
            "users": [{"name": user, "user": {"token": token or self.admin_token}}],
            "contexts": [
                {
                    "name": "computedomain-sim",
                    "context": {
                        "cluster": "computedomain-sim",
                        "user": user,
                        "namespace": "default",
                    },
                }
            ],
            "current-context": "computedomain-sim",
        }
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(yaml.safe_dump(config, sort_keys=False))
        tmp.chmod(0o600)
        tmp.replace(path)
        return path

    def _cluster_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"server": self.url}
        if self.serving_cert is not None:
            entry["certificate-authority-data"] = base64.b64encode(
                self.serving_cert.cert_pem
            ).decode()
        return entry

    async def install_crds(self, paths: Iterable[Path]) -> list[str]:
        """Create (or replace) every CustomResourceDefinition in the YAML files ``paths``
        (multi-document; other kinds are ignored). Returns the CRD names; raises
        :class:`.status.ApiStatusError` for an invalid CRD."""
        return self.install_crd_documents(load_crd_documents(paths))

    def install_crd_documents(self, docs: Iterable[dict[str, Any]]) -> list[str]:
        state = self._require_state()
        rt = state.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert rt is not None
        names = []
        for doc in docs:
            name = str((doc.get("metadata") or {}).get("name", ""))
            current = state.store.get(rt.storage_key, name)
            if current is None:
                writes.create(state, rt, "", doc)
            else:
                writes.replace(state, rt, current, doc)
            names.append(name)
        return names

    def _require_state(self) -> ApiState:
        if self.state is None:
            msg = "the server is not started"
            raise RuntimeError(msg)
        return self.state

    def start_in_thread(self, timeout: float = 30.0) -> ServerThread:
        """Run this server on a new event loop in a daemon thread; returns once listening."""
        thread = ServerThread(self)
        thread.start(timeout)
        return thread


def _load(state: ApiState, crds: CrdController, persistence: SqlitePersistence) -> None:
    """Rebuild the store from ``persistence``: CRDs first (so their kinds are served and
    indexed), then everything else; no watch window reaches before the loaded state."""
    rows = list(persistence.rows())
    store = state.store
    store.rv = max([persistence.resource_version(), *(r.rv for r in rows)])
    by_key: dict[tuple[str, str], list[Entry]] = {}
    for row in sorted(rows, key=lambda r: r.skey != CRD_KEY):
        obj = jsoncodec.loads(row.raw)
        if row.skey == CRD_KEY:
            crds.serve(obj)
        rt = state.registry.by_storage(row.skey)
        if rt is not None:
            labels, fields, owners = objects.index_values(rt, obj)
        else:
            labels, fields, owners = (obj.get("metadata") or {}).get("labels") or {}, {}, ()
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        by_key.setdefault(row.skey, []).append(
            Entry(row.key, row.raw, row.rv, uid, labels, fields, owners)
        )
    for skey, entries in by_key.items():
        store.load(skey, entries)
    store.reset_windows()


def load_crd_documents(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The CustomResourceDefinition documents of the YAML files (directories: every
    ``*.yaml``/``*.yml`` inside, sorted)."""
    files: list[Path] = []
    for given in paths:
        p = Path(given)
        if p.is_dir():
            files += sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml"))
        else:
            files.append(p)
    docs = []
    for f in files:
        try:
            loaded = list(yaml.safe_load_all(f.read_text()))
        except yaml.YAMLError as exc:
            raise status.bad_request(f"{f}: {exc}") from None
        for doc in loaded:
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                docs.append(doc)
    return docs


class ServerThread:
    """An :class:`EmbeddedApiServer` on its own loop thread (context manager)."""

    def __init__(self, server: EmbeddedApiServer) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="embedded-apiserver", daemon=True)
        self._started = threading.Event()
        self._error: BaseException | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            try:
                await self.server.start()
            except BaseException as exc:  # reported to the starting thread
                self._error = exc
                self._started.set()
                return
            self._started.set()

        self.loop.run_until_complete(main())
        if self._error is None:
            self.loop.run_forever()
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def start(self, timeout: float = 30.0) -> None:
        self._thread.start()
        if not self._started.wait(timeout):
            msg = "embedded API server did not start in time"
            raise TimeoutError(msg)
        if self._error is not None:
            raise self._error

    def call(self, coro: Any, timeout: float = 30.0) -> Any:
        """Run a coroutine on the server's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def install_crds(self, paths: Iterable[Path]) -> list[str]:
        result: list[str] = self.call(self.server.install_crds(paths))
        return result

    def stop(self, timeout: float = 30.0) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self.call(self.server.stop(), timeout)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)

    def __enter__(self) -> ServerThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
