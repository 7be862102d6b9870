"""The request-accounting stage through the real client: requests counted by authenticated user,
verb and user agent, with the 409 answers, as ``bench/e2e.py`` reports them."""

from __future__ import annotations

import contextlib

import pytest

from computedomain.kube import errors, resources
from computedomain.kube.client import ClientConfig, connect
from computedomain_sim.apiserver.accounting import UNAUTHENTICATED, RequestAccounting
from computedomain_sim.apiserver.server import EmbeddedApiServer

NS = "default"
SA_USER = f"system:serviceaccount:{NS}:counted"


async def test_requests_are_counted_by_user_verb_agent_and_conflict() -> None:
    accounting = RequestAccounting()
    async with EmbeddedApiServer(rbac=True, stages=[accounting]) as server:
        admin = await connect(
            ClientConfig(url=server.url, token=server.admin_token, qps=0, user_agent="tester")
        )
        try:
            account = await admin.create(
                resources.SERVICE_ACCOUNTS, {"metadata": {"name": "counted"}}, NS
            )
            cm = await admin.create(
                resources.CONFIG_MAPS, {"metadata": {"name": "a"}, "data": {"k": "1"}}, NS
            )
            await admin.update(resources.CONFIG_MAPS, {**cm, "data": {"k": "2"}})
            with pytest.raises(errors.Conflict):
                await admin.update(resources.CONFIG_MAPS, {**cm, "data": {"k": "3"}})
            assert server.state is not None
            assert server.state.authenticator is not None
            token, _ = server.state.authenticator.issue_service_account_token(
                NS, "counted", account["metadata"]["uid"]
            )
            sa = await connect(ClientConfig(url=server.url, token=token, qps=0))
            try:
                with pytest.raises(errors.Forbidden):
                    await sa.get(resources.CONFIG_MAPS, "a", NS)
                # A watch is counted as it starts, while it is still open.
                stream = admin.watch(
                    resources.CONFIG_MAPS, NS, resource_version=cm["metadata"]["resourceVersion"]
                )
                first = await anext(stream)
                assert first.object["metadata"]["name"] == "a"
                assert accounting.snapshot()["admin"]["verbs"]["watch"] == 1
                await stream.aclose()
            finally:
                await sa.close()
            intruder = await connect(ClientConfig(url=server.url, token="not-a-token", qps=0))
            try:
                with contextlib.suppress(errors.ApiError):
                    await intruder.get(resources.CONFIG_MAPS, "a", NS)
            finally:
                await intruder.close()
        finally:
            await admin.close()
    counts = accounting.snapshot()
    assert counts["admin"]["verbs"] == {"create": 2, "update": 2, "watch": 1}
    assert counts["admin"]["agents"] == {"tester": 5}
    assert counts["admin"]["409"] == 1
    assert counts["admin"]["429"] == 0
    assert counts[SA_USER]["verbs"] == {"get": 1}
    assert counts[SA_USER]["409"] == 0
    assert counts[UNAUTHENTICATED]["total"] >= 1
    assert accounting.total() == sum(entry["total"] for entry in counts.values())
    accounting.reset()
    assert accounting.snapshot() == {}
