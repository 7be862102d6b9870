"""Import the official client's modules without running its package initialisers.

``import kubernetes.aio.client`` first executes ``kubernetes/__init__.py`` and
``kubernetes/aio/__init__.py``, and those import every subsystem of both clients: the
synchronous client's kubeconfig loader (with requests, urllib3, oauthlib), the dynamic clients,
watch, stream, utils, leader election and the informer. We use none of them: :mod:`.client`
needs the asyncio ``Configuration``, REST client and one of the two config
loaders, and :mod:`.errors` the two exception modules. ``kubernetes.aio.config`` and
``kubernetes.aio.utils`` are left uninitialised too: the first imports the kubeconfig loader
(PyYAML, the exec and OIDC providers) even for a pod that uses its in-cluster configuration,
the second the YAML object creator, which only the REST client's retry helper sits next to.
The two top initialisers were 94 of the 405 ms of CPU a daemon spends importing its parts
(``-c "import computedomain.daemon.config, computedomain.daemon.runner"``, 40 runs), and a
daemon starts per node per domain; the other two are PyYAML and the kubeconfig loader, about
20 ms more for an in-cluster program.

:func:`install` registers the four packages as package modules that have their installed search
path but whose ``__init__`` has not run yet. Every submodule imports as usual, from the same
files, unchanged; the initialiser runs the first time anyone asks the package for a name it
would have defined (``kubernetes.__version__``, a bare ``kubernetes.config``, ``from kubernetes
import watch``), so code that relies on the aggregation still works and only pays for it then.
Our modules import by full name (``import kubernetes.aio.config.kube_config``, never ``from
kubernetes.aio import config``) and never trigger it. When any of the packages is already
imported (a test process that used the synchronous client first, say), nothing is changed.

Called once from ``computedomain/kube/__init__.py``, so that it runs before any module of the
package imports the client.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import types
from collections.abc import Callable
from typing import Any

# Parents before children (a child is found through its registered parent).
_PACKAGES = ("kubernetes", "kubernetes.aio", "kubernetes.aio.config", "kubernetes.aio.utils")


def install() -> None:
    """Register the packages of ``_PACKAGES`` uninitialised (see the module doc).
    Idempotent; does nothing if any is imported already or cannot be found."""
    if any(name in sys.modules for name in _PACKAGES):
        return
    for name in _PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return
        module = importlib.util.module_from_spec(spec)
        module.__getattr__ = _initialiser(module, spec.loader)  # type: ignore[method-assign]
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)


def _initialiser(module: types.ModuleType, loader: importlib.abc.Loader) -> Callable[[str], Any]:
    """A module ``__getattr__`` that runs the package's own ``__init__`` once, on the first
    name the module lacks, then answers from the initialised module."""

    def __getattr__(name: str) -> Any:
        if "__getattr__" in module.__dict__:
            del module.__dict__["__getattr__"]  # the initialiser's own lookups must not recurse
            loader.exec_module(module)
        try:
            return module.__dict__[name]
        except KeyError:
            msg = f"module {module.__name__!r} has no attribute {name!r}"
            raise AttributeError(msg) from None

    return __getattr__
