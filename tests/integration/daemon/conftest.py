"""Fixtures of the daemon's integration tests: one embedded API server with the driver's CRDs
per test module (each test works in a namespace of its own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from computedomain_sim.apiserver import testing
from tests.support.clusters import crd_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.RunningServer]:
    with crd_server(tmp_path_factory.mktemp("apiserver")) as running:
        yield running
