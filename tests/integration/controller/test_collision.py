"""A workload template name that is already taken: said clearly, never retried in a loop."""

from __future__ import annotations

from typing import Any

import pytest

from computedomain.kube import errors, resources
from computedomain_sim.apiserver import testing
from tests.integration.controller.harness import Bench, bench
from tests.support.polling import eventually


def _template(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": []}}},
    }


async def _conflict(b: Bench, name: str) -> dict[str, Any]:
    def conflicted(status: dict[str, Any]) -> bool:
        conds = status.get("conditions") or []
        return bool(conds) and conds[0]["reason"] == "WorkloadTemplateConflict"

    return await b.wait_status(name, conflicted, "a WorkloadTemplateConflict condition")


@pytest.mark.parametrize("owner", ["nobody", "another-domain"])
async def test_name_collision(apiserver: testing.RunningServer, owner: str) -> None:
    async with bench(apiserver) as b:
        controller = await b.start()
        if owner == "nobody":
            await b.api.create(resources.RESOURCE_CLAIM_TEMPLATES, _template("taken", b.user))
        else:
            await b.create_domain("first", template="taken")
            await b.wait_status("first", lambda s: True, "the first domain's status")
        created = await b.create_domain("second", template="taken")
        uid = created["metadata"]["uid"]
        domain = await _conflict(b, "second")
        (ready,) = domain["status"]["conditions"]
        assert ready["status"] == "False"
        assert f"ResourceClaimTemplate {b.user}/taken already exists" in ready["message"]

        async def warned() -> list[dict[str, Any]]:
            return [
                e
                for e in await b.events("second")
                if e["type"] == "Warning" and e["reason"] == "WorkloadTemplateConflict"
            ]

        await eventually(warned, what="a Warning event")
        # A permanent error: no retry is scheduled, and no create was ever attempted.
        assert controller.queue.num_requeues(uid) == 0
        assert b.api.stats.total(verb="create", resource="resourceclaimtemplates", code=409) == 0

        # The colliding object goes: the change re-evaluates the domain, which gets its template.
        if owner == "nobody":
            await b.api.delete(resources.RESOURCE_CLAIM_TEMPLATES, "taken", b.user)
        else:
            await b.delete_domain_and_wait("first")

        async def ours() -> bool:
            try:
                found = await b.api.get(resources.RESOURCE_CLAIM_TEMPLATES, "taken", b.user)
            except errors.NotFound:
                return False
            labels = found["metadata"].get("labels") or {}
            return labels.get("resource.nvidia.com/computeDomain") == uid

        await eventually(ours, what="the second domain's own template")
        await b.wait_status(
            "second",
            lambda s: s["conditions"][0]["reason"] != "WorkloadTemplateConflict",
            "the conflict to clear",
        )
