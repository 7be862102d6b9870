"""Deterministic fault scenarios around the node label that the random runs found: a label
write that lands although the client was told it failed (504), while the plugin's Node cache
cannot catch up (its list and watch fail). Unprepare reads the Node from the API before it
decides there is no label to remove, so the label is released all the same."""

from __future__ import annotations

from pathlib import Path

from computedomain_sim.faults.apiserver import ApiFaults
from tests.faults import harness
from tests.integration.kubeletplugin.conftest import ref, running_plugin

# Every Node update lands but is answered 504; the plugin cannot list or watch Nodes.
STALE_NODE_CACHE = (
    "504=1,verbs=update,resources=nodes;500=1,verbs=list|watch,resources=nodes;"
    f"agents={harness.PLUGIN_AGENT}*;seed=1"
)


async def test_unprepare_releases_a_label_whose_write_was_answered_with_an_error(
    tmp_path: Path, short_dir: Path
) -> None:
    faults = ApiFaults(STALE_NODE_CACHE, enabled=False)
    async with harness.faulty_cluster(faults, tmp_path) as cluster:
        cd = await cluster.world.domain("alpha")
        claim = await cluster.world.claim("channel", cd["metadata"]["uid"])
        uid = claim["metadata"]["uid"]
        env = harness.plugin_environment(short_dir / "n", cluster)
        api = await cluster.component_api()
        try:
            async with running_plugin(env, api) as plugin, await plugin.kubelet() as kubelet:
                faults.enabled = True
                faults.drop_watches("nodes")  # the Node cache stops following
                # The label is written and the answer is 504. (A retry within the deadline may
                # then see the label through a 409 and a live read, and wait for the daemon.)
                result = (await kubelet.prepare([ref(claim)], deadline=1.0))[uid]
                assert result.error
                assert faults.counts["504"] >= 1
                assert await cluster.world.node_label() == cd["metadata"]["uid"]
                # The pod is gone before the claim was ever prepared: the kubelet unprepares.
                assert await kubelet.unprepare([ref(claim)], deadline=5) == {uid: ""}
                assert harness.injected(short_dir / "n", uid) == []
                faults.enabled = False
                assert await cluster.world.node_label() is None, "a label without a claim"
        finally:
            await api.close()
