"""Fixtures of the kubelet plugin's unit tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: unix socket paths must fit in 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="kpu-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
