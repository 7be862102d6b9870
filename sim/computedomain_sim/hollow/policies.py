"""The policy registry of a hollow process, loaded once.

A real daemon or kubelet plugin loads the registry (:func:`computedomain.policies.registry.load`:
the built-ins and every plugin of the ``computedomain`` entry-point group) once, at start. The
hollow process stands in for hundreds of them, so loading it per hollow daemon and per hollow
plugin (mostly scanning entry points) would be paid hundreds of times over. One process sees the
same installed plugins and environment whichever node asks, and the registry builds each selected
policy once and reuses it, as within one real process. Used by :mod:`.daemon` and :mod:`.plugin`.
"""

from __future__ import annotations

import functools

from computedomain.policies import registry

__all__ = ["loaded"]


@functools.cache
def loaded() -> registry.Policies:
    """The process's registry (loaded on first use). Raises ConfigError as ``load`` does."""
    return registry.load()
