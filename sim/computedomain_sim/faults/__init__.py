"""Fault injection for the embedded cluster: the API server now, the simulation's processes,
nodes and disks through the same scheduler.

- :mod:`.spec` — the compact fault spec (``409=0.05,latency=5ms..50ms,seed=42``), validated;
- :mod:`.decide` — the pure, seeded decision for one API request;
- :mod:`.apiserver` — :class:`~.apiserver.ApiFaults`, the ``EmbeddedApiServer(stages=[...])``
  stage that injects them, with :mod:`.watches` (dropped streams, expired windows) and
  :mod:`.control` (``/debug/faults``: change them at run time, admin only);
- :mod:`.counts` — what was injected, by kind and target, for reports;
- :mod:`.schedule` — the :class:`~.schedule.Fault` protocol and the seeded
  :class:`~.schedule.FaultScheduler` that fires faults at random moments: :mod:`.processes`
  (SIGKILL of a component), :mod:`.disk` (a full disk for one process, ``RLIMIT_FSIZE``),
  :mod:`.nodes` (a reboot, a node NotReady, through the simulation's node callables) and
  :class:`~.apiserver.WatchFault` (drop or expire long-lived watches).

Only the CLI and tests import this package (import-linter: nothing imports ``sim``).
"""
