"""``cd-kubelet-plugin``: parse the configuration, connect to the API, run the plugin.

Only wiring. Any startup error (bad flag or environment, a failed node check, no API
configuration) prints ``Error: <what and why>`` on stderr and exits 1; bad data found later (a
corrupt checkpoint, a malformed object) is handled by the plugin without exiting.

The plugin's parts (gRPC, the Kubernetes client, the models) are imported once the settings
are read, with the garbage collector paused (:mod:`computedomain.runtime.gcstartup`): 480 -> 340
ms of CPU per start, and the simulation starts one plugin per node at once; and without reading
the system's trust store for aiohttp's unused default contexts (:mod:`.runtime.tlsstartup`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from computedomain.api.errors import ConfigError, PermanentError
from computedomain.kubeletplugin import config as cfg
from computedomain.runtime import gcstartup, logs, supervisor, tlsstartup


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return 1


async def _serve(config: cfg.Config) -> int:
    # Imported by main (see the module docstring).
    from computedomain.kube.client import ClientConfig, ClientConfigError, connect  # noqa: PLC0415
    from computedomain.kubeletplugin.plugin import COMPONENT, KubeletPlugin  # noqa: PLC0415

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
    with gcstartup.paused(), tlsstartup.deferred():
        import computedomain.kube.client  # noqa: F401, PLC0415 -- see the module docstring
        from computedomain.kubeletplugin.plugin import COMPONENT  # noqa: PLC0415
    logs.setup(config.verbosity, COMPONENT)
    return supervisor.run(lambda: _serve(config))


if __name__ == "__main__":
    sys.exit(main())
