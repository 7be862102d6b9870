"""Start-up imports that do not read the system's trust store until a connection needs it.

``import aiohttp`` builds two default TLS contexts at import time (``aiohttp.connector``: one
verifying, one not) and each reads and parses the system's CA bundle (``/etc/ssl/certs``, 144
certificates here): about 60 ms of CPU per process, a sixth of what ``cd-imex-daemon run``
spends on its imports, and a domain that forms starts one daemon per node at once. Our programs
never use those contexts: the Kubernetes client builds its own from the cluster's CA file (or
the kubeconfig's), and the non-verifying one does not look at trust roots at all.

Inside :func:`deferred` a context that asks for the default verify paths gets them on first use
instead: ``set_default_verify_paths`` (which ``create_default_context`` and
``load_default_certs`` call) turns the context into a :class:`DeferredTrustContext`, which loads
the paths the first time it wraps a socket or BIO or is asked for its CA certificates, then
becomes a plain :class:`ssl.SSLContext` again. What a connection trusts is unchanged; a process
that never connects with those contexts never reads the bundle. Called by the programs' wiring
around their heavy imports (with :mod:`computedomain.runtime.gcstartup`), while no other thread
runs; no effect outside the block.
"""

from __future__ import annotations

import contextlib
import ssl
from _ssl import _SSLContext
from collections.abc import Iterator
from typing import Any

__all__ = ["DeferredTrustContext", "deferred"]

_METHOD = "set_default_verify_paths"


class DeferredTrustContext(ssl.SSLContext):
    """An SSL context whose default verify paths are loaded on first use."""

    def _load_trust(self) -> None:
        if type(self) is DeferredTrustContext:
            self.__class__ = ssl.SSLContext  # type: ignore[assignment]  # back to plain
            _SSLContext.set_default_verify_paths(self)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self._load_trust()
        return ssl.SSLContext.wrap_socket(self, *args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self._load_trust()
        return ssl.SSLContext.wrap_bio(self, *args, **kwargs)

    def get_ca_certs(self, *args: Any, **kwargs: Any) -> Any:
        self._load_trust()
        return ssl.SSLContext.get_ca_certs(self, *args, **kwargs)

    def cert_store_stats(self) -> dict[str, int]:
        self._load_trust()
        return ssl.SSLContext.cert_store_stats(self)


def _defer(context: ssl.SSLContext) -> None:
    if type(context) is ssl.SSLContext:
        context.__class__ = DeferredTrustContext
    else:  # a subclass of someone else's: load as asked
        _SSLContext.set_default_verify_paths(context)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Contexts that ask for the default verify paths inside the block load them on first
    use (see the module doc). Not reentrant-safe across threads: start-up only."""
    if _METHOD in vars(ssl.SSLContext):  # already inside the block, or patched by others
        yield
        return
    setattr(ssl.SSLContext, _METHOD, _defer)
    try:
        yield
    finally:
        delattr(ssl.SSLContext, _METHOD)
