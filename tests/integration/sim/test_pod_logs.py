"""``pods/log`` on the simulated cluster: the official client's ``read_namespaced_pod_log``
(what ``kubectl logs`` calls) gets what the container wrote, the tail of it, or a clear 400
naming what is wrong; the cluster serves HTTPS and the client trusts its CA."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes.aio import client as k8s
from kubernetes.aio.client.exceptions import ApiException

from computedomain.kube.resources import PODS
from tests.support.clusters import running_cluster
from tests.support.polling import eventually

from .helpers import namespace, pod, ready_pod


def message(exc: ApiException) -> str:
    return str(json.loads(exc.body)["message"])


PRINTS = "import time\nfor i in range(3): print('line', i, flush=True)\ntime.sleep(600)\n"


async def test_the_log_of_a_container_is_served(tmp_path: Path) -> None:
    async with running_cluster(tmp_path / "sim") as cluster:
        api = cluster.api
        assert api is not None
        assert cluster.url.startswith("https://")
        ns = await namespace(api, "logs")
        await api.create(PODS, pod("talker", ns, PRINTS))
        two = pod("two", ns, PRINTS)
        two["spec"]["containers"].append({**two["spec"]["containers"][0], "name": "second"})
        await api.create(PODS, two)
        await ready_pod(api, "talker", ns)
        core = k8s.CoreV1Api(api.api_client)

        async def log(name: str, **kw: object) -> str:
            text: str = await core.read_namespaced_pod_log(name, ns, **kw)
            return text

        async def three_lines() -> str | None:
            text = await log("talker")
            return text if text.count("line") == 3 else None

        assert await eventually(three_lines, what="three lines") == "line 0\nline 1\nline 2\n"
        assert await log("talker", tail_lines=1, container="main") == "line 2\n"
        assert await log("talker", limit_bytes=4) == "line"

        with pytest.raises(ApiException) as previous:
            await log("talker", previous=True)
        assert previous.value.status == 400
        assert message(previous.value).startswith('previous terminated container "main"')

        await ready_pod(api, "two", ns)
        with pytest.raises(ApiException) as ambiguous:
            await log("two")
        assert message(ambiguous.value).endswith("choose one of: [main second]")
        with pytest.raises(ApiException) as unknown:
            await log("two", container="third")
        assert message(unknown.value) == "container third is not valid for pod two"
