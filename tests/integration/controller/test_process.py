"""cd-controller as a real process: leader election between two replicas, a restart in the
middle of a deletion, health endpoints, signals and exit codes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import attrs
import pytest

from computedomain.api import names
from computedomain.kube import errors, resources
from computedomain_sim.apiserver import testing
from tests.integration.controller.harness import IMAGE, Bench, bench
from tests.support.polling import eventually

CLI = Path(sys.executable).with_name("cd-controller")
LEASE = "cd-controller-test"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@attrs.define
class Replica:
    name: str
    process: asyncio.subprocess.Process
    port: int
    log: Path

    async def get(self, path: str) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{self.port}{path}") as response,
        ):
            return response.status, await response.text()

    async def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        if self.process.returncode is None:
            self.process.send_signal(sig)
        return await asyncio.wait_for(self.process.wait(), 20)


@contextlib.asynccontextmanager
async def replica(
    server: testing.RunningServer, b: Bench, name: str, tmp: Path, *, election: bool
) -> AsyncIterator[Replica]:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
        "POD_NAME": name,
        "NAMESPACE": b.driver,
        "IMAGE_NAME": IMAGE,
        "LOG_VERBOSITY_CD_DAEMON": "4",
        "KUBECONFIG": str(server.kubeconfig),
        "KUBE_API_QPS": "200",
        "KUBE_API_BURST": "400",
        "HTTP_ENDPOINT": f"127.0.0.1:{port}",
        "LEADER_ELECTION_ENABLED": "true" if election else "false",
        "LEADER_ELECTION_LEASE_LOCK_NAMESPACE": b.driver,
        "LEADER_ELECTION_LEASE_LOCK_NAME": LEASE,
        "LEADER_ELECTION_LEASE_DURATION": "3s",
        "LEADER_ELECTION_RENEW_DEADLINE": "2s",
        "LEADER_ELECTION_RETRY_PERIOD": "500ms",
    }
    log = tmp / f"{name}.log"
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            str(CLI), "-v", "4", env=env, stdout=out, stderr=asyncio.subprocess.STDOUT
        )
    running = Replica(name, process, port, log)
    try:
        yield running
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _ready(r: Replica) -> bool:
    if r.process.returncode is not None:
        msg = f"{r.name} exited with {r.process.returncode}:\n{r.log.read_text()[-3000:]}"
        raise AssertionError(msg)
    with contextlib.suppress(aiohttp.ClientError):
        status, _ = await r.get("/readyz")
        return status == 200
    return False


async def _holder(b: Bench) -> str:
    with contextlib.suppress(errors.NotFound):
        lease = await b.api.get(resources.LEASES, LEASE, b.driver)
        return str((lease.get("spec") or {}).get("holderIdentity") or "")
    return ""


async def _reconciled_by(b: Bench, name: str) -> str:
    """The replica (event source host) that created the domain's objects."""
    await b.wait_status(name, lambda s: True, f"{name} to get a status")

    async def created() -> list[dict[str, Any]]:
        return [e for e in await b.events(name) if e["reason"] == "Created"]

    (event,) = await eventually(created, what=f"the Created event of {name}")
    return str(event["source"]["host"])


@pytest.mark.slow
async def test_two_replicas_one_leads_the_other_takes_over(
    apiserver: testing.RunningServer, tmp_path: Path
) -> None:
    async with (
        bench(apiserver) as b,
        replica(apiserver, b, "replica-a", tmp_path, election=True) as a,
        replica(apiserver, b, "replica-b", tmp_path, election=True) as c,
    ):
        await eventually(lambda: _ready(a), what="replica-a ready")
        await eventually(lambda: _ready(c), what="replica-b ready")
        holder = await eventually(lambda: _holder(b), what="a lease holder")
        leader, standby = (a, c) if holder.startswith("replica-a-") else (c, a)
        assert holder.startswith(f"{leader.name}-")
        assert len(holder) == len(leader.name) + 1 + 36  # <pod>-<uuid4>
        await b.create_domain("first")
        assert await _reconciled_by(b, "first") == leader.name
        # The standby is ready too (it only waits for the lease), and says it stands by.
        assert (await standby.get("/readyz"))[0] == 200
        assert "computedomain_controller_leader 0.0" in (await standby.get("/metrics"))[1]
        assert "computedomain_controller_leader 1.0" in (await leader.get("/metrics"))[1]
        assert (await leader.get("/healthz"))[0] == 200
        _, metrics = await leader.get("/metrics")
        assert 'nvidia_dra_compute_domain_info{status="Ready"} 1.0' in metrics

        # Kill the leader hard: the lease is not released, the standby waits for it to expire.
        assert await leader.stop(signal.SIGKILL) == -signal.SIGKILL

        async def taken_over() -> bool:
            return (await _holder(b)).startswith(f"{standby.name}-")

        await eventually(taken_over, what="the standby to take the lease", within=15)
        await b.create_domain("second")
        assert await _reconciled_by(b, "second") == standby.name

        # SIGTERM: a clean exit that releases the lease.
        assert await standby.stop() == 0
        assert await _holder(b) == ""


@pytest.mark.slow
async def test_restart_in_the_middle_of_a_deletion(
    apiserver: testing.RunningServer, tmp_path: Path
) -> None:
    async with bench(apiserver) as b:
        async with replica(apiserver, b, "first", tmp_path, election=False) as first:
            await eventually(lambda: _ready(first), what="the controller ready")
            created = await b.create_domain("cd", template="chan")
            uid = created["metadata"]["uid"]
            await b.wait_status("cd", lambda s: True, "a first status")
            name = names.daemon_object_name(uid)
            ds = await b.api.get(resources.DAEMON_SETS, name, b.driver)
            ds["metadata"]["finalizers"].append("example.com/hold")
            await b.api.update(resources.DAEMON_SETS, ds)
            await b.api.delete(resources.COMPUTE_DOMAINS, "cd", b.user)

            async def halfway() -> bool:
                return await b.gone(resources.RESOURCE_CLAIM_TEMPLATES, "chan", b.user)

            await eventually(halfway, what="the deletion to be under way")
            assert await first.stop(signal.SIGKILL) == -signal.SIGKILL

        ds = await b.api.get(resources.DAEMON_SETS, name, b.driver)
        ds["metadata"]["finalizers"] = [
            f for f in ds["metadata"]["finalizers"] if f != "example.com/hold"
        ]
        await b.api.update(resources.DAEMON_SETS, ds)
        assert not await b.gone(resources.COMPUTE_DOMAINS, "cd", b.user)
        async with replica(apiserver, b, "second", tmp_path, election=False) as second:
            await eventually(lambda: _ready(second), what="the restarted controller ready")

            async def finished() -> bool:
                return await b.gone(resources.COMPUTE_DOMAINS, "cd", b.user)

            await eventually(finished, what="the deletion to finish after the restart")
            assert await b.gone(resources.DAEMON_SETS, name, b.driver)
            assert await b.gone(resources.RESOURCE_CLAIM_TEMPLATES, name, b.driver)
            assert await second.stop() == 0


async def test_bad_setting_exits_2_naming_it() -> None:
    """The real binary; every other bad setting is covered in-process by test_flags."""
    env = {"POD_NAME": "p", "IMAGE_NAME": "i", "LOG_VERBOSITY_CD_DAEMON": "1"}
    process = await asyncio.create_subprocess_exec(
        str(CLI),
        env={"PATH": os.environ.get("PATH", ""), **env, "FEATURE_GATES": "Nope=true"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert "FEATURE_GATES: unrecognized feature gate: Nope" in stderr.decode()
