"""Great-circle distances and tangent-plane steps."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmodels.tracking.geometry import (
    EARTH_RADIUS_KM,
    great_circle_km,
    pairwise_distance_km,
    tangent_offsets,
    tangent_step,
    wrap_longitude,
)


def test_known_distances():
    quarter = math.pi * EARTH_RADIUS_KM / 2
    assert np.isclose(great_circle_km(0, 0, 0, 90), quarter)
    assert np.isclose(great_circle_km(0, 0, 90, 0), quarter)
    assert np.isclose(great_circle_km(10, 20, -10, -160), 2 * quarter)  # antipodes
    assert np.isclose(great_circle_km(-58, 10, -57, 10), EARTH_RADIUS_KM * math.pi / 180)
    # along a parallel the great circle is shorter than the parallel arc
    arc = EARTH_RADIUS_KM * math.radians(10) * math.cos(math.radians(-60))
    assert great_circle_km(-60, -90, -60, -80) < arc
    assert np.isclose(great_circle_km(-60, 179.5, -60, -179.5), great_circle_km(-60, 0, -60, 1))


def test_pairwise_kernel_matches_spherical_law_of_cosines(rng):
    lat, lon = rng.uniform(-89, 89, 500), rng.uniform(-180, 180, 500)
    slat, slon = rng.uniform(-89, 89, 7), rng.uniform(-180, 360, 7)
    d = pairwise_distance_km(lat, lon, slat, slon)
    p1, p2 = np.radians(lat)[:, None], np.radians(slat)[None, :]
    cosang = np.sin(p1) * np.sin(p2) + np.cos(p1) * np.cos(p2) * np.cos(
        np.radians(slon[None, :] - lon[:, None])
    )
    ref = EARTH_RADIUS_KM * np.arccos(np.clip(cosang, -1, 1))
    assert d.shape == (500, 7)
    assert np.allclose(d, ref, atol=1e-3)
    assert np.allclose(d, great_circle_km(lat[:, None], lon[:, None], slat, slon), atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(
    lat=st.floats(-80, 80),
    lon=st.floats(-180, 180),
    east=st.floats(-300, 300),
    north=st.floats(-300, 300),
)
def test_tangent_step_round_trip(lat, lon, east, north):
    lat1, lon1 = tangent_step(lat, lon, east, north)
    assert -180 <= lon1 < 180
    e, n = tangent_offsets(lat, lon, lat1, lon1)
    assert np.isclose(e, east, atol=1e-6) and np.isclose(n, north, atol=1e-6)
    # a small step is (to first order) a step of that many km on the sphere; the second-order
    # error grows with the step and with the convergence of meridians (tan lat)
    step = math.hypot(east, north)
    if step < 30:
        rtol = step / EARTH_RADIUS_KM * (1 + math.tan(math.radians(abs(lat))))
        assert np.isclose(great_circle_km(lat, lon, lat1, lon1), step, rtol=rtol, atol=1e-6)


def test_wrap_longitude():
    assert np.allclose(wrap_longitude([-180, 180, 190, -190, 359.5]), [-180, -180, -170, 170, -0.5])
