"""The recovery check's end point on a stated motion: the filter's last cycle moved on by
the step the dynamics predict to the surfacing, from that cycle's velocity, and the largest
eigenvalue of the covariance the step adds plus the fix's variance as its extra variance,
each written out here (a dynamics whose predicted step is given)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from rankmodels.tracking.assessment import end_point
from rankmodels.tracking.geometry import EARTH_RADIUS_KM


class _Stated:
    """Dynamics that move ``dt`` times ``step`` km (east, north) with ``dt`` times the
    covariance ``[[5, 2], [2, 2]]`` (eigenvalues 6 and 1), remembering what they were asked."""

    def __init__(self, step=(3.0, -4.0)):
        self.step = np.array(step)
        self.asked = []

    def predicted_step(self, velocity, dt):
        self.asked.append((velocity, dt))
        return self.step * dt, np.array([[5.0, 2.0], [2.0, 2.0]]) * dt


def _case(days):
    prepared = SimpleNamespace(
        recovery=(-58.4, -96.7), cycle_steps=np.array([0, 2, 3]), days_to_recovery=days,
        recovery_sigma=2.0,
    )  # fmt: skip
    mean = np.array([[-57.0, -100.0], [-57.5, -99.0], [-58.0, -98.0], [-58.2, -97.0]])
    cov = np.stack([np.eye(2) * (k + 1) for k in range(4)])
    filt = SimpleNamespace(mean=mean, cov=cov, velocity_at=lambda t: f"velocity of step {t}")
    return prepared, filt


@pytest.mark.parametrize("step", [(3.0, -4.0), (3.0, 0.0)])
def test_the_end_point_moves_on_to_the_surfacing_with_the_largest_added_variance(step):
    prepared, filt = _case(1.5)
    dynamics = _Stated(step)
    end = end_point(prepared, SimpleNamespace(dynamics=dynamics), filt)
    assert dynamics.asked == [("velocity of step 3", 1.5)]
    lat, lon = -58.2, -97.0
    east, north = 1.5 * step[0], 1.5 * step[1]
    expected = (
        lat + math.degrees(north / EARTH_RADIUS_KM),
        lon + math.degrees(east / (EARTH_RADIUS_KM * math.cos(math.radians(lat)))),
    )
    np.testing.assert_allclose(end.mean, expected, rtol=0, atol=1e-9)
    assert end.extra_var == pytest.approx(6.0 * 1.5 + 4.0, rel=1e-12)
    np.testing.assert_array_equal(end.cov, np.eye(2) * 4)
    assert end.fix == (-58.4, -96.7)


def test_no_end_point_without_a_recovery_fix():
    prepared, filt = _case(1.0)
    prepared.recovery = None
    assert end_point(prepared, SimpleNamespace(dynamics=_Stated()), filt) is None
