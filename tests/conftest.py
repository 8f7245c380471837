"""Shared fixtures: paths to the shipped samples and to the real data in ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("RANKMODELS_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261123)


@pytest.fixture
def repo_data() -> Path:
    """The sample inputs shipped in the repository's ``data/``."""
    return REPO / "data"


@pytest.fixture
def shared_data() -> Path:
    """Real data sets beside the repository (read-only); tests needing it skip without it."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
