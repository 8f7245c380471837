"""The tracker's distribution functions equal scipy.stats' (which the tracker does not
import: it costs half a second at every start-up)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from rankmodels.tracking import distributions as d


def test_densities_equal_scipy_stats():
    x = np.linspace(-40.0, 200.0, 97)
    for scale in (0.5, 3.0, 8.0):
        np.testing.assert_allclose(d.norm_logpdf(x, scale), stats.norm.logpdf(x, scale=scale))
        for shape in (0.2, 1.0, 6.0, 60.0):
            np.testing.assert_allclose(
                d.exponnorm_logpdf(x, shape, scale),
                stats.exponnorm.logpdf(x, shape, scale=scale),
                rtol=1e-10,
                atol=1e-10,
            )


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
