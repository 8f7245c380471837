"""Shared fixtures: paths to the shipped samples and to the real data in ../shared/data.

Hypothesis profiles: ``dev`` (default) keeps the local example database, so a failure found once
is replayed on this machine, and prints the reproduction blob of a failure; ``ci`` (chosen when
the ``CI`` environment variable is set, or with ``HYPOTHESIS_PROFILE=ci``) derandomizes the
examples and uses no database, so every machine tests the same examples and a result never
depends on what an earlier run saved.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from hypothesis import settings

matplotlib.use("Agg")

settings.register_profile("dev", print_blob=True)
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("RANKMODELS_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261123)


@pytest.fixture
def repo_data() -> Path:
    """The sample inputs shipped in the repository's ``data/``."""
    return REPO / "data"


@pytest.fixture(scope="session")
def model_float767():
    """``(record, truth)``: the shipped sample's float without its mismatch -- the signals
    exactly as its file states them (the paper's model). Tests of the model's accuracy use it;
    the shipped ``data/float767.nc`` carries a mismatch only calibration removes."""
    from rankmodels.tracking.records import validate_float
    from rankmodels.tracking.simulate import dimes_float767

    record, truth = dimes_float767()
    return validate_float(record), truth


@pytest.fixture
def shared_data() -> Path:
    """Real data sets beside the repository (read-only); tests needing it skip without it."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
