"""A host ``nvidia-imex.service`` holding the IMEX session (``NV_ERR_IN_USE``) is surfaced to
the user (docs/operations.md#troubleshooting): a Warning event on the daemon pod and the
ComputeDomain's ``Ready``
condition (reason and message) name it; once the host releases the session the domain gets
Ready by itself.

The daemons run the IMEX stand-ins through a wrapper directory (``--imex-path``) in which a
marker file per node makes the stand-in fail as a host-held session does.
"""

from __future__ import annotations

import pytest

from computedomain.kube import resources

from . import kit, kit_extra

pytestmark = [
    pytest.mark.slow,
    pytest.mark.scenario,
    pytest.mark.xdist_group("default-cluster"),
    pytest.mark.timeout(300),
]

HELD_REASON = "IMEXSessionHeldByHost"


@pytest.fixture(scope="module")
def setup(request: pytest.FixtureRequest) -> kit_extra.Shared:
    shared: kit_extra.Shared = request.getfixturevalue("default_cluster")
    return shared


async def test_a_host_held_session_shows_in_the_event_and_the_ready_condition(
    setup: kit_extra.Shared,
) -> None:
    cluster = setup.cluster
    held = setup.markers / "r0n1.held"
    held.touch()
    async with kit.api_of(cluster) as api:
        ns = await kit.create_namespace(api, "held")
        domain = await kit.create_domain(api, ns, "job", num_nodes=2)
        uid = domain["metadata"]["uid"]
        await kit.create_worker(api, ns, "job", "r0n0", name="w0")
        await kit.create_worker(api, ns, "job", "r0n1", name="w1")

        async def conflict_event() -> dict[str, object] | None:
            for pod in await kit.daemon_pods(api, uid):
                if pod["spec"].get("nodeName") != "r0n1":
                    continue
                events = await kit.events_about(
                    api, kit.DRIVER_NAMESPACE, "Pod", pod["metadata"]["name"]
                )
                for event in events:
                    if event.get("reason") == HELD_REASON:
                        return event
            return None

        event = await kit.eventually(
            conflict_event,
            what="a Warning event on r0n1's daemon pod naming the host-held session",
            explain=lambda: kit.doctor_text(cluster, ns, "job"),
        )
        assert event["type"] == "Warning"
        assert "NV_ERR_IN_USE" in str(event["message"])
        assert "systemctl disable --now nvidia-imex" in str(event["message"])

        async def condition_names_it() -> dict[str, str] | None:
            got = await api.get(resources.COMPUTE_DOMAINS, "job", ns)
            condition = kit.ready_condition(got)
            if condition.get("status") == "False" and "NV_ERR_IN_USE" in condition.get(
                "message", ""
            ):
                return condition
            return None

        async def explain() -> str:
            got = await api.get(resources.COMPUTE_DOMAINS, "job", ns)
            return f"status: {got.get('status')}"

        condition = await kit.eventually(
            condition_names_it,
            what="the Ready condition naming the host-held session",
            explain=explain,
        )
        assert condition["reason"] == HELD_REASON
        assert "r0n1" in condition["message"]
        got = await api.get(resources.COMPUTE_DOMAINS, "job", ns)
        assert got["status"]["status"] == "NotReady"

        # The host releases the session: the daemon's nvidia-imex starts, the domain gets Ready.
        held.unlink()
        await kit.domain_ready(api, cluster, ns, "job")
        await kit.pods_running(api, cluster, ns, selector="app in (w0,w1)", count=2)
        got = await api.get(resources.COMPUTE_DOMAINS, "job", ns)
        assert kit.ready_condition(got)["status"] == "True"
        await kit_extra.release(api, cluster, ns)
