"""``cd-kubelet-plugin``: read the settings, connect to the API, run the plugin.

Only wiring. A bad flag or environment variable exits with status 2 and argparse's usage
message (:func:`~computedomain.kubeletplugin.config.load`); any other startup error (a failed
node check, no API configuration) prints ``Error: <what and why>`` on stderr and exits 1; bad
data found later (a corrupt checkpoint, a malformed object) is handled by the plugin without
exiting. The plugin's parts (gRPC, the Kubernetes client, the models) are imported once the
settings are read, so that a bad setting or ``--help`` answers at once.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from computedomain.api.errors import PermanentError
from computedomain.kubeletplugin import config as cfg
from computedomain.runtime import logs, supervisor


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return 1


async def _serve(config: cfg.Config) -> int:
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
    config = cfg.load(argv)
    from computedomain.kubeletplugin.plugin import COMPONENT  # noqa: PLC0415

    logs.setup(config.verbosity, COMPONENT)
    return supervisor.run(lambda: _serve(config))


if __name__ == "__main__":
    sys.exit(main())
