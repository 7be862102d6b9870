"""The narrow NVML interface the kubelet plugin uses, and the choice of backend.

Everything the plugin needs from NVML fits in two calls, each of which initialises NVML (with
``INIT_FLAG_NO_GPUS``), queries, and shuts it down again, as upstream does at startup:
the driver version (for the DNS-names gate) and the GPUs with their fabric info (for the clique
ID). The real backend wraps nvidia-ml-py and is imported lazily, so a host without the NVIDIA
library can run the fake backend; the fake backend serves named hardware profiles.
"""

from __future__ import annotations

import enum
from typing import Protocol, runtime_checkable

from computedomain.nvml.types import Gpu


@runtime_checkable
class Nvml(Protocol):
    """What the plugin asks of NVML. Both calls block (run them in a thread) and raise NvmlError."""

    def driver_version(self) -> str:
        """The NVIDIA kernel driver version, e.g. ``570.158.01``."""
        ...

    def gpus(self) -> tuple[Gpu, ...]:
        """Every GPU in NVML's index order, with the result of its fabric-info query."""
        ...


class BackendName(enum.StrEnum):
    """``--nvml-backend`` / ``NVML_BACKEND``."""

    REAL = "real"
    FAKE = "fake"
