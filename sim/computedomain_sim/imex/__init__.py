"""Stand-ins for ``nvidia-imex`` and ``nvidia-imex-ctl``, for the simulation only.

They read the same config and nodes files as the real tools, resolve peer names through a hosts
file, really connect to each other over TCP and answer ``-q`` with ``READY``, so the daemon's
supervision is exercised through real processes, signals and sockets. They are never on the
production PATH: ``computedomain sim imex-path`` prints a directory of wrapper scripts
(:mod:`computedomain_sim.imex.wrappers`).
"""
