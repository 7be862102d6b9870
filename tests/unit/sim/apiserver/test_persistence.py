"""``data_dir`` persistence: objects, CRDs and the resourceVersion counter survive a restart;
a corrupt store is reported, never silently dropped."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from computedomain_sim.apiserver.persistence import CorruptStoreError
from computedomain_sim.apiserver.server import EmbeddedApiServer
from tests.conftest import CRD_FIXTURES


async def _req(server: EmbeddedApiServer, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {server.admin_token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, server.url + path, json=body, headers=headers) as resp,
    ):
        return resp.status, await resp.json()


async def test_restart_keeps_objects_crds_and_rv(tmp_path: Path) -> None:
    async with EmbeddedApiServer(data_dir=tmp_path, admin_token="t") as server:
        await server.install_crds([CRD_FIXTURES / "computedomain.yaml"])
        code, cm = await _req(
            server,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            {"metadata": {"name": "keep", "labels": {"a": "b"}}, "data": {"k": "v"}},
        )
        assert code == 201
        code, cd = await _req(
            server,
            "POST",
            "/apis/resource.nvidia.com/v1beta1/namespaces/default/computedomains",
            {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "ComputeDomain",
                "metadata": {"name": "cd"},
                "spec": {"channel": {"resourceClaimTemplate": {"name": "r"}}},
            },
        )
        assert code == 201
        await _req(server, "DELETE", "/api/v1/namespaces/default/configmaps/never")
        await _req(
            server,
            "POST",
            "/api/v1/namespaces/default/serviceaccounts",
            {"metadata": {"name": "sa"}},
        )
        code, issued = await _req(
            server, "POST", "/api/v1/namespaces/default/serviceaccounts/sa/token", {"spec": {}}
        )
        assert code == 201
        last_rv = server.state.store.rv  # type: ignore[union-attr]
    async with EmbeddedApiServer(data_dir=tmp_path, admin_token="t") as again:
        assert again.state is not None
        assert again.state.store.rv == last_rv
        assert again.state.authenticator is not None
        user = again.state.authenticator.authenticate(issued["status"]["token"])
        assert user is not None, "tokens issued before a restart stay valid"
        assert user.name == "system:serviceaccount:default:sa"
        code, got = await _req(again, "GET", "/api/v1/namespaces/default/configmaps/keep")
        assert code == 200
        assert got == cm
        code, listed = await _req(
            again, "GET", "/api/v1/namespaces/default/configmaps?labelSelector=a%3Db"
        )
        assert [i["metadata"]["name"] for i in listed["items"]] == ["keep"]
        code, got_cd = await _req(
            again, "GET", "/apis/resource.nvidia.com/v1beta1/namespaces/default/computedomains/cd"
        )
        assert code == 200
        assert got_cd["metadata"]["uid"] == cd["metadata"]["uid"]
        code, new = await _req(
            again, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "n"}}
        )
        assert int(new["metadata"]["resourceVersion"]) > last_rv
        # No event window reaches back before the restart: a watch from then is 410 Gone.
        headers = {"Authorization": "Bearer t"}
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                again.url + "/api/v1/namespaces/default/configmaps",
                params={"watch": "1", "resourceVersion": "2", "timeoutSeconds": "1"},
                headers=headers,
            ) as resp,
        ):
            first = json.loads((await resp.content.readline()).decode())
        assert first["type"] == "ERROR"
        assert first["object"]["code"] == 410


async def test_corrupt_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "store.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(CorruptStoreError) as exc:
        await EmbeddedApiServer(data_dir=tmp_path).start()
    assert str(tmp_path / "store.sqlite") in str(exc.value)
    assert "corrupt" in str(exc.value)
    assert (tmp_path / "store.sqlite").read_bytes().startswith(b"this is not"), "left in place"


async def test_corrupt_row_is_reported(tmp_path: Path) -> None:
    async with EmbeddedApiServer(data_dir=tmp_path):
        pass
    db = sqlite3.connect(tmp_path / "store.sqlite")
    db.execute("UPDATE objects SET data = ? WHERE key = 'default'", (b"{broken",))
    db.commit()
    db.close()
    with pytest.raises(CorruptStoreError, match="namespaces default is not valid JSON"):
        await EmbeddedApiServer(data_dir=tmp_path).start()
