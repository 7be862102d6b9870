"""Fixtures for the kube layer's integration tests: our Api pointed at the embedded server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from computedomain.kube.rest import Api
from computedomain_sim.apiserver import testing
from tests.support.clusters import CRDS, admin_api


@pytest.fixture(scope="module")
def crds(apiserver: testing.RunningServer) -> None:
    """The ComputeDomain CRDs, installed once per module."""
    apiserver.install_crds([CRDS])


@pytest.fixture
async def api(apiserver: testing.RunningServer) -> AsyncIterator[Api]:
    """An Api (admin token, no client-side rate limit) for the module's server."""
    async with admin_api(apiserver, field_manager="kube-tests") as client:
        yield client
