"""Fixtures of the controller's integration tests: one embedded server per module, CRDs in."""

from __future__ import annotations

import pytest

from computedomain_sim.apiserver import testing
from tests.support.clusters import CRDS


@pytest.fixture(scope="module", autouse=True)
def crds(apiserver: testing.RunningServer) -> None:
    apiserver.install_crds([CRDS])
