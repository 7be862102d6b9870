"""Process plumbing shared by the programs, with no Kubernetes in it.

- :mod:`.supervisor` — ``Supervisor`` (task lifecycle, signals, fatal errors) and ``run()``;
- :mod:`.logs` — ``setup()`` and ``get_logger()``: key=value log lines;
- :mod:`.flags` — ``Option``/``FlagSet``: flags with environment-variable twins;
- :mod:`.httpserver` — ``HttpServer``: /healthz, /readyz, metrics;
- :mod:`.files` — ``atomic_write``, ``move_aside`` and ``to_thread`` file adapters;
- :mod:`.clock` — ``Clock``, ``REAL_CLOCK`` and ``ManualClock`` (virtual time for tests).
"""
