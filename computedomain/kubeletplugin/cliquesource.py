"""Which rules this node's clique discovery follows, and the clique ID from NVML's GPUs.

The rules are fixed at startup (docs/compatibility.md#clique-id-discovery): strict or legacy by
``CrashOnNVLinkFabricErrors``, and, with the ``FabricManagerPartitioning`` gate on and a local
NVLink fabric under the container driver root, GPUs whose fabric registration is not complete
are skipped (docs/compatibility.md#partitioned-fabrics-on-single-node-nvlink-systems). The
startup checks (:mod:`.startup`) and the periodic refresh (:mod:`.cliquerefresh`) read the
clique through :func:`clique_of`, so both apply the same rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from computedomain.api import featuregates
from computedomain.nvml import clique, localfabric
from computedomain.nvml.types import Gpu
from computedomain.runtime import logs

log = logs.get_logger(__name__)


@attrs.frozen
class CliqueRules:
    """How the GPUs' fabric states become the clique ID on this node."""

    strict: bool
    skip_incomplete: bool = False


def rules_for(features: featuregates.Features, dev_root: Path) -> CliqueRules:
    """The node's rules. Reads the local-fabric files only when the gate is on (blocking);
    raises LocalFabricError (a PermanentError) when they cannot be read."""
    strict = features.crash_on_nvlink_fabric_errors
    partitioning = features.enabled(featuregates.FABRIC_MANAGER_PARTITIONING)
    local = partitioning and localfabric.has_local_fabric(dev_root)
    if partitioning:
        log.info("single-node NVLink check", local_fabric=local, dev_root=str(dev_root))
    return CliqueRules(strict=strict, skip_incomplete=strict and local)


def clique_of(gpus: Sequence[Gpu], rules: CliqueRules) -> str:
    """The clique ID under ``rules``, logging each GPU skipped for an unfinished registration.
    Raises CliqueError when the GPUs forbid starting."""
    found = clique.discover(gpus, strict=rules.strict, skip_incomplete=rules.skip_incomplete)
    if rules.skip_incomplete:
        for gpu in clique.incomplete(gpus):
            state = gpu.fabric.state if gpu.fabric is not None else -1
            log.info(
                f"no-clique fallback: ignoring incomplete NVLink registration "
                f"(device={gpu.index}/{gpu.uuid}, state={state}) on single-node NVLink system"
            )
    return found
