"""The ``nvidia.com/gpu.clique`` label on this node (``GPU_CLIQUE_LABEL_ENABLED``).

The contract: docs/compatibility.md#the-nvidiacomgpuclique-node-label. The value is the node's
clique ID, ``<cluster UUID>.<clique id>``, the format gpu-feature-discovery used, so affinity
rules written for that label keep working. Both writes are JSON merge patches of the label
alone (no read, no compare-and-swap: the plugin owns the key, and a merge patch leaves every
other label alone):

- :meth:`CliqueLabel.publish` after the caches have synced and on every successful refresh;
  an empty clique sets nothing and removes nothing. A failure raises
  :class:`CliqueLabelError` (at startup the plugin stops with it);
- :meth:`CliqueLabel.withdraw` when the plugin stops: the key set to ``null``, within 5
  seconds, a failure only logged.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from computedomain.api.errors import PermanentError
from computedomain.kube import resources
from computedomain.kube.rest import Api
from computedomain.runtime import logs

log = logs.get_logger(__name__)

LABEL: Final = "nvidia.com/gpu.clique"
WITHDRAW_TIMEOUT: Final = 5.0


class CliqueLabelError(PermanentError):
    """The label could not be set; the message carries upstream's words and the cause."""


def patch(value: str | None) -> dict[str, Any]:
    """The merge patch that sets (or, with None, removes) the label. Pure."""
    return {"metadata": {"labels": {LABEL: value}}}


class CliqueLabel:
    """Sets and removes the label on ``node_name``."""

    def __init__(self, api: Api, node_name: str) -> None:
        self.api = api
        self.node_name = node_name

    async def publish(self, clique_id: str) -> None:
        """Set the label to ``clique_id`` (nothing when empty). Raises CliqueLabelError."""
        if not clique_id:
            return
        try:
            await self.api.patch(resources.NODES, self.node_name, patch(clique_id))
        except Exception as exc:
            msg = f"error setting {LABEL} node label: error patching node with label {LABEL}: {exc}"
            raise CliqueLabelError(msg) from exc
        log.info("set the node's clique label", label=LABEL, value=clique_id)

    async def withdraw(self) -> None:
        """Remove the label. Never raises (shutdown goes on); a failure is logged."""
        try:
            async with asyncio.timeout(WITHDRAW_TIMEOUT):
                await self.api.patch(resources.NODES, self.node_name, patch(None))
        except Exception as exc:
            log.warning("could not remove the node's clique label", label=LABEL, error=str(exc))
            return
        log.info("removed the node's clique label", label=LABEL)
