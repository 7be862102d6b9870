"""The official client imports without its package initialisers, and still works in full."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Modules only the skipped initialisers import (the synchronous client's kubeconfig loader and
# its HTTP stack, the dynamic client, the informer).
SKIPPED = ["kubernetes.config", "kubernetes.dynamic", "kubernetes.informer", "requests", "urllib3"]
# What only the kubeconfig loader brings: an in-cluster program (every pod in production)
# never loads it.
KUBECONFIG_LOADER = ["kubernetes.aio.config.kube_config", "yaml"]
INCLUSTER_LOADER = "kubernetes.aio.config.incluster_config"


def _modules_after(code: str, modules: list[str] = SKIPPED) -> dict[str, object]:
    script = (
        "import json, sys\n"
        f"{code}\n"
        f"print(json.dumps({{m: m in sys.modules for m in {modules!r}}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return result


def test_our_client_loads_none_of_the_other_subsystems() -> None:
    loaded = _modules_after("from computedomain.kube import client, errors, rest")
    assert loaded == dict.fromkeys(SKIPPED, False)


def test_requests_go_through_the_rest_client_without_the_generated_models() -> None:
    # An Api sends a request through the official REST client with its Configuration's bearer
    # token; the generated ApiClient (and pydantic with it) is loaded only when asked for.
    code = (
        "import asyncio\n"
        "from computedomain.kube import client, errors, resources\n"
        "async def main():\n"
        "    api = await client.connect(client.ClientConfig(url='http://127.0.0.1:9', token='t'))\n"
        "    try:\n"
        "        await api.get(resources.NODES, 'n')\n"
        "    except errors.ApiConnectionError:\n"
        "        pass\n"
        "    finally:\n"
        "        await api.close()\n"
        "asyncio.run(main())\n"
    )
    generated = ["kubernetes.aio.client.api_client", "pydantic"]
    assert _modules_after(code, generated) == dict.fromkeys(generated, False)
    asked = code.replace(
        "        await api.close()", "        assert api.api_client\n        await api.close()"
    )
    assert _modules_after(asked, generated) == dict.fromkeys(generated, True)


def test_in_cluster_configuration_loads_no_kubeconfig_loader() -> None:
    # The in-cluster loader reads fixed paths: point it at missing ones and expect its error,
    # then check what the attempt loaded.
    code = (
        "import asyncio, os\n"
        "os.environ.update(KUBERNETES_SERVICE_HOST='127.0.0.1', KUBERNETES_SERVICE_PORT='1')\n"
        "os.environ.pop('KUBECONFIG', None)\n"
        "from computedomain.kube import client\n"
        "try:\n"
        "    asyncio.run(client.load_configuration(client.ClientConfig()))\n"
        "except client.ClientConfigError as exc:\n"
        "    assert 'in-cluster configuration failed' in str(exc), exc\n"
    )
    loaded = _modules_after(code, [*KUBECONFIG_LOADER, INCLUSTER_LOADER])
    assert loaded == {**dict.fromkeys(KUBECONFIG_LOADER, False), INCLUSTER_LOADER: True}


def test_a_kubeconfig_file_is_still_read_with_the_official_loader(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    code = (
        "import asyncio\n"
        "from computedomain.kube import client\n"
        f"wanted = client.ClientConfig(kubeconfig={str(kubeconfig)!r})\n"
        "c = asyncio.run(client.load_configuration(wanted))\n"
        "assert c.host == 'http://127.0.0.1:9', c.host\n"
    )
    assert _modules_after(code, KUBECONFIG_LOADER) == dict.fromkeys(KUBECONFIG_LOADER, True)


def test_the_rest_of_the_official_client_still_imports_by_name() -> None:
    code = (
        "from computedomain.kube import client\n"
        "from kubernetes import client as sync_client, config, watch\n"
        "from kubernetes.aio import config as aio_config\n"
        "import kubernetes.dynamic\n"
        "assert sync_client.CoreV1Api and config.load_kube_config and watch.Watch\n"
        "assert aio_config.load_kube_config and kubernetes.dynamic.DynamicClient"
    )
    assert _modules_after(code)["kubernetes.config"] is True


def test_asking_the_package_for_a_name_runs_its_initialiser() -> None:
    # What the skipped __init__ defines is there on first use: kubernetes.dynamic reads
    # kubernetes.__version__, and a bare import reaches every subsystem by attribute.
    code = (
        "from computedomain.kube import client\n"
        "import kubernetes\n"
        "from kubernetes import __version__\n"
        "assert __version__ and kubernetes.config.load_kube_config and kubernetes.watch.Watch\n"
        "import kubernetes.aio\n"
        "assert kubernetes.aio.watch and kubernetes.aio.__version__ == __version__"
    )
    assert _modules_after(code)["kubernetes.config"] is True


def test_a_client_imported_first_is_left_as_it_is() -> None:
    # The full package came first: install() must not replace it.
    code = (
        "import kubernetes\n"
        "full = kubernetes\n"
        "from computedomain.kube import client\n"
        "assert sys.modules['kubernetes'] is full and full.config.load_kube_config"
    )
    assert _modules_after(code)["kubernetes.config"] is True
