"""The `computedomain` command: demo, sim, doctor."""
