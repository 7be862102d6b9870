"""How long the fault suites run: the short set (``make test``) or the long one
(``pytest tests/faults --faults-long``, i.e. ``make faults``), and with which seeds.

``tests/faults/conftest.py`` calls :func:`configure` from ``pytest_configure`` — before any test
module is imported — so modules read :data:`LONG`, :func:`seeds` and :func:`examples` at import
time (for ``parametrize`` and Hypothesis ``settings``). The property suites of bad input in
``tests/property/test_bad_input_*.py`` use the same functions: outside ``tests/faults`` they
always get the short numbers. A seed given with ``--faults-seed N`` (or ``CD_FAULTS_SEED``)
replaces the seeds of every randomized run, to replay a failure.
"""

from __future__ import annotations

import os
import random
import secrets

SESSION_SEED = "CD_FAULTS_SESSION_SEED"
LONG = False
SEED: int | None = int(os.environ["CD_FAULTS_SEED"]) if os.environ.get("CD_FAULTS_SEED") else None


def configure(*, long: bool, seed: int | None) -> None:
    global LONG, SEED  # noqa: PLW0603 - set once, before collection
    LONG = long
    env = os.environ.get("CD_FAULTS_SEED", "").strip()
    SEED = seed if seed is not None else (int(env) if env else None)


def seeds(short: tuple[int, ...], long_count: int) -> list[int]:
    """The seeds of a randomized run: ``short`` (fixed, so CI is reproducible), or in the long
    set ``short`` plus ``long_count`` fresh random ones; ``--faults-seed`` overrides both."""
    if SEED is not None:
        return [SEED]
    if not LONG:
        return list(short)
    rng = random.Random(session_seed())  # the same seeds in every xdist worker
    return [*short, *(rng.randrange(2**31) for _ in range(long_count))]


def session_seed() -> int:
    """The random seed of this session's long set: drawn once by the first process to ask
    (the controller, from ``pytest_configure``) and passed to xdist workers in the
    environment, so every worker collects the same parametrized tests."""
    if not os.environ.get(SESSION_SEED):
        os.environ[SESSION_SEED] = str(secrets.randbelow(2**31))
    return int(os.environ[SESSION_SEED])


def examples(short: int, long: int) -> int:
    """Hypothesis ``max_examples`` for the set being run."""
    return long if LONG else short


def scale(short: float, long: float) -> float:
    """Any other size (steps of a run, seconds of a phase) for the set being run."""
    return long if LONG else short
