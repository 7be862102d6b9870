"""Runs the corpus's cases on a cluster and gives each step's normalised result.

One :class:`Runner` per cluster: it holds the kubeconfig, a Python client (the dynamic client's
discovery is made once) and a scratch folder for kubectl's discovery cache and helm's homes.
Each case runs in its own namespace, made first and left behind (the cluster is thrown away);
kubectl and helm get a kubeconfig whose context defaults to it, so the corpus's command lines
say ``-n`` only where the namespace matters to the interaction.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config, watch
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import DynamicApiError

from tests import binaries

from . import normalise
from .cases import Call, Case, Cli, Dynamic, GoClient, Step, Watch

Result = dict[str, Any]

CHARTS = Path(__file__).parent / "charts"


class Runner:
    def __init__(self, kubeconfig: Path, scratch: Path) -> None:
        self.kubeconfig = kubeconfig
        self.scratch = scratch
        self.api = config.new_client_from_config(config_file=str(kubeconfig))
        self._dynamic: DynamicClient | None = None
        self._made: set[str] = set()

    def close(self) -> None:
        self.api.close()

    @property
    def dynamic(self) -> DynamicClient:
        if self._dynamic is None:
            self._dynamic = DynamicClient(self.api)
        return self._dynamic

    def run(self, case: Case, stop_at: int | None = None) -> list[Result]:
        """Every step's normalised result (up to and including ``stop_at``)."""
        self._namespace(case.namespace)
        kubeconfig = self._kubeconfig_for(case.namespace)
        results = []
        for index, step in enumerate(case.steps):
            results.append(self._step(case, step, kubeconfig))
            if stop_at is not None and index >= stop_at:
                break
        return results

    def _namespace(self, name: str) -> None:
        if name not in self._made:
            client.CoreV1Api(self.api).create_namespace({"metadata": {"name": name}})
            self._made.add(name)

    def _kubeconfig_for(self, namespace: str) -> Path:
        path = self.scratch / "kubeconfigs" / namespace
        if not path.exists():
            loaded = yaml.safe_load(self.kubeconfig.read_text())
            for context in loaded["contexts"]:
                context["context"]["namespace"] = namespace
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump(loaded))
        return path

    def _step(self, case: Case, step: Step, kubeconfig: Path) -> Result:
        ns = case.namespace
        if isinstance(step, Cli):
            result = self._cli(case, step, kubeconfig)
        elif isinstance(step, Call):
            result = self._call(case, step.api, step.method, fill(step.kwargs, ns))
        elif isinstance(step, Dynamic):
            result = self._dynamic_call(case, step)
        elif isinstance(step, GoClient):
            result = self._go_client(case, step, kubeconfig)
        else:
            result = self._watch(case, step)
        if step.setup:
            ok = result.get("exit", 0) == 0 and result.get("status", 200) < 300
            return {"setup": "ok"} if ok else {"setup": "failed", **result}
        return result

    def _cli(self, case: Case, step: Cli, kubeconfig: Path) -> Result:
        args = [
            a.replace("{ns}", case.namespace).replace("{charts}", str(CHARTS)) for a in step.args
        ]
        home = self.scratch / "home"
        env = {
            "PATH": binaries.search_path(),
            "HOME": str(home),
            "KUBECONFIG": str(kubeconfig),
            "KUBECACHEDIR": str(self.scratch / "kube-cache"),
            "HELM_CACHE_HOME": str(home / "helm-cache"),
            "HELM_CONFIG_HOME": str(home / "helm-config"),
            "HELM_DATA_HOME": str(home / "helm-data"),
        }
        stdin = None if step.stdin is None else step.stdin.replace("{ns}", case.namespace)
        done = subprocess.run(
            [binaries.path(step.program), *args],
            input=stdin, capture_output=True, text=True, timeout=120, env=env, check=False,
        )  # fmt: skip
        return {
            "exit": done.returncode,
            "stdout": normalise.output(done.stdout, args, case.generated, case.drop),
            "stderr": normalise.table(done.stderr, case.generated),
        }

    def _go_client(self, case: Case, step: GoClient, kubeconfig: Path) -> Result:
        program = binaries.path("cd-conformance-client")
        done = subprocess.run(
            [program, "-namespace", case.namespace, step.scenario],
            capture_output=True, text=True, timeout=150, check=False,
            env={"PATH": binaries.search_path(), "HOME": str(self.scratch / "home"),
                 "KUBECONFIG": str(kubeconfig)},
        )  # fmt: skip
        if done.returncode != 0:
            return {"exit": done.returncode, "stderr": normalise.table(done.stderr[-2000:])}
        steps = json.loads(done.stdout)["steps"]
        return {"exit": 0, "steps": normalise.data(steps, case.generated, case.drop)}

    def _call(self, case: Case, api: str, method: str, kwargs: dict[str, Any]) -> Result:
        target = getattr(getattr(client, api)(self.api), f"{method}_with_http_info")
        try:
            body, status, _ = target(**kwargs)
        except client.ApiException as error:
            return self._error(case, error.status, error.body)
        return {"status": status, "body": self._plain(case, body)}

    def _dynamic_call(self, case: Case, step: Dynamic) -> Result:
        kwargs = fill(step.kwargs, case.namespace)
        try:
            resource = self.dynamic.resources.get(api_version=step.api_version, kind=step.kind)
            body = getattr(resource, step.verb)(**kwargs)
        except DynamicApiError as error:
            return self._error(case, error.status, error.body)
        return {"status": 200, "body": self._plain(case, body.to_dict())}

    def _watch(self, case: Case, step: Watch) -> Result:
        ns = case.namespace
        kwargs = fill(step.kwargs, ns)
        method: Callable[..., Any] = getattr(getattr(client, step.api)(self.api), step.method)
        since = kwargs.pop("resource_version", None)
        if since is None:
            since = method(**kwargs).metadata.resource_version
        then = [self._call(case, c.api, c.method, fill(c.kwargs, ns)) for c in step.then]
        events: list[Any] = []
        stream = watch.Watch()
        try:
            for event in stream.stream(method, resource_version=since, timeout_seconds=5, **kwargs):
                events.append([event["type"], self._plain(case, event["object"])])
                if len(events) >= step.events:
                    break
        except client.ApiException as error:
            events.append(self._error(case, error.status, error.body or error.reason))
        finally:
            stream.stop()
        return {"then": then, "events": events}

    def _error(self, case: Case, status: int | None, body: Any) -> Result:
        if isinstance(body, bytes):
            body = body.decode()
        if isinstance(body, str):
            with contextlib.suppress(ValueError):
                body = json.loads(body)
        return {"status": status, "body": normalise.data(body, case.generated, case.drop)}

    def _plain(self, case: Case, body: Any) -> Any:
        plain = self.api.sanitize_for_serialization(body)
        return normalise.data(plain, case.generated, case.drop)


def fill(value: Any, ns: str) -> Any:
    """``value`` with ``{ns}`` in its strings replaced by the case's namespace."""
    if isinstance(value, dict):
        return {k: fill(v, ns) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [fill(v, ns) for v in value]
    if isinstance(value, str):
        return value.replace("{ns}", ns)
    return value


def refusal_seen(result: Result, code: int, message: str) -> bool:
    """Whether a step's result is the stated refusal: exit code or HTTP status, and message."""
    got = result.get("exit", result.get("status"))
    blob = json.dumps(result) if "body" in result else str(result.get("stderr", ""))
    return got == code and message in blob
