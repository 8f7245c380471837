"""The tracker's distribution functions equal scipy.stats' (which the tracker does not
import: it costs half a second at every start-up)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from rankmodels.tracking import distributions as d
from rankmodels.tracking.arrival_density import direct_path_share, survival
from rankmodels.tracking.signal_model import SignalModel


@pytest.mark.parametrize(
    ("sigma", "multipath", "delay"),
    [(5.0, 0.02, 30.0), (0.5, 0.3, 60.0), (3.0, 0.05, 10.0), (8.0, 0.0, 30.0)],
)
def test_arrival_densities_equal_scipy_stats(sigma, multipath, delay):
    """The direct path's share ``(1 - P_M) N / ((1 - P_M) N + P_M EMG)`` and the survival
    ``(1 - P_M) Q + P_M EMG_sf`` from scipy's norm and exponnorm; the share is 1 without
    multipath and 0 for a NaN residual (one convention for every caller)."""
    model = SignalModel(sigma=sigma, p_detect=0.9, clutter_rate=1.0, window=1800.0,
                        multipath=multipath, multipath_delay=delay)  # fmt: skip
    x = np.linspace(-40.0, 200.0, 97)
    direct = (1 - multipath) * stats.norm.pdf(x, scale=sigma)
    delayed = multipath * stats.exponnorm.pdf(x, delay / sigma, scale=sigma)
    share = direct_path_share(x, model)
    both = direct + delayed > 1e-290  # where scipy's densities do not underflow
    want = direct[both] / (direct + delayed)[both]
    np.testing.assert_allclose(share[both], want, rtol=1e-9, atol=1e-300)
    assert np.all((share >= 0) & (share <= 1)) and both.sum() > 40
    tail = (1 - multipath) * stats.norm.sf(x, scale=sigma) + multipath * stats.exponnorm.sf(
        x, delay / sigma, scale=sigma
    )
    np.testing.assert_allclose(survival(x, model), tail, rtol=1e-9, atol=1e-300)
    assert direct_path_share(np.array([np.nan]), model)[0] == 0.0
    if multipath == 0:
        assert (direct_path_share(x, model) == 1.0).all()


@pytest.mark.parametrize("mu", [1e-3, 0.4, 1.0, 3.7, 25.0, 412.5])
def test_poisson_and_chi2_equal_scipy_stats(mu):
    k = np.arange(-2, int(3 * mu) + 5)
    np.testing.assert_allclose(d.poisson_cdf(k, mu), stats.poisson.cdf(k, mu), rtol=1e-12)
    for q in (1e-9, 0.01, 0.5, 0.9, 0.999, 1 - 1e-9):
        assert d.poisson_ppf(q, mu) == stats.poisson.ppf(q, mu)
        for df in (1.0, 2.0, 7.5, mu + 1.0):
            assert d.chi2_ppf(q, df) == pytest.approx(stats.chi2.ppf(q, df), rel=1e-10)


def test_track_float_does_not_import_scipy_stats_or_matplotlib():
    code = (
        "import sys, rankmodels_app.track; "
        "print(sorted(m for m in ('scipy.stats', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
