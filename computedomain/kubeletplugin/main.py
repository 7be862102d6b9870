"""``cd-kubelet-plugin``: parse the configuration, connect to the API, run the plugin.

Only wiring. Any startup error (bad flag or environment, a failed node check, no API
configuration) prints ``Error: <what and why>`` on stderr and exits 1; bad data found later (a
corrupt checkpoint, a malformed object) is handled by the plugin without exiting.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from computedomain.api.errors import ConfigError, PermanentError
from computedomain.kube.client import ClientConfig, ClientConfigError, connect
from computedomain.kubeletplugin import config as cfg
from computedomain.kubeletplugin.plugin import COMPONENT, KubeletPlugin
from computedomain.runtime import logs, supervisor


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return 1


async def _serve(config: cfg.Config) -> int:
    try:
        api = await connect(
            ClientConfig(
                kubeconfig=config.kubeconfig or None,
                qps=config.kube_api_qps,
                burst=config.kube_api_burst,
                user_agent=COMPONENT,
                field_manager=COMPONENT,
            )
        )
    except ClientConfigError as exc:
        return _fail(f"API server configuration: {exc}")
    try:
        await KubeletPlugin(config, api).run()
    except PermanentError as exc:
        return _fail(str(exc))
    finally:
        await api.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cd-kubelet-plugin`` command."""
    try:
        config = cfg.parse(sys.argv[1:] if argv is None else argv, os.environ)
    except ConfigError as exc:
        return _fail(str(exc))
    logs.setup(config.verbosity, COMPONENT)
    return supervisor.run(lambda: _serve(config))


if __name__ == "__main__":
    sys.exit(main())
