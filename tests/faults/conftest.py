"""Options of the fault suites: ``--faults-long`` (the long set, ``make faults``) and
``--faults-seed N`` (replay one seed). Tests marked ``faults_long`` run only in the long set
(they are deselected otherwise, not skipped). The cluster fault run also honours the suite-wide
``--control-plane`` (``tests/conftest.py``); the other suites inject API faults, which only the
embedded API server can, and ignore it."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults import settings


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("faults", "fault injection suites")
    group.addoption(
        "--faults-long",
        action="store_true",
        default=False,
        help="run the long fault-injection set (more seeds, steps and examples)",
    )
    group.addoption(
        "--faults-seed",
        type=int,
        default=None,
        help="replay every randomized fault run with this seed (also CD_FAULTS_SEED)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "faults_long: runs only with --faults-long")
    settings.configure(
        long=bool(config.getoption("faults_long", default=False)),
        seed=config.getoption("faults_seed", default=None),
    )
    if settings.LONG:
        settings.session_seed()  # before xdist starts its workers, which inherit it


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if settings.LONG:
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("faults_long") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per fault run over the simulated cluster (``record_property("fault_run")``
    of :mod:`tests.faults.test_cluster_faults`), workers' runs included."""
    lines = [
        str(value)
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", "") == "call"
        for name, value in getattr(report, "user_properties", [])
        if name == "fault_run"
    ]
    if lines:
        terminalreporter.write_sep("=", f"fault runs: {len(lines)}")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: unix socket paths must fit in 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="kf-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
