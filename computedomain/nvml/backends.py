"""Choosing the NVML backend from configuration (``NVML_BACKEND`` and the fake's settings).

Wiring code calls :func:`select` once; unknown names are a ConfigError listing the valid ones.
"""

from __future__ import annotations

from pathlib import Path

from computedomain.api.errors import ConfigError
from computedomain.nvml import fake
from computedomain.nvml.interface import BackendName, Nvml
from computedomain.nvml.real import RealNvml


def parse_backend(value: str, *, setting: str = "NVML_BACKEND") -> BackendName:
    try:
        return BackendName(value)
    except ValueError:
        valid = ", ".join(b.value for b in BackendName)
        raise ConfigError(setting, f"unknown NVML backend {value!r} (valid: {valid})") from None


def select(
    backend: BackendName,
    *,
    profile: fake.Profile = fake.Profile.GB200,
    clique: str = fake.DEFAULT_CLIQUE,
    profile_file: Path | None = None,
    driver_root: Path | None = None,
) -> Nvml:
    """The backend object. Pure; neither backend touches anything until first called."""
    if backend is BackendName.FAKE:
        return fake.FakeNvml(profile=profile, clique=clique, profile_file=profile_file)
    return RealNvml(driver_root=driver_root)
