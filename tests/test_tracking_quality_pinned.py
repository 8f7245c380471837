"""Quality checks pinned by hand on a handful of constructed cycles: which cycles count as
'with data' (a cycle with some ranks empty does, an empty cycle does not), the launch
check's distance and its cycle count at the limit, the local clutter scan on partly filled
cycles, and what is not computed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rankmodels.tracking.geometry import tangent_offsets, tangent_step
from rankmodels.tracking.quality import (
    CHECKS,
    LAUNCH_ALLOWANCE_KM,
    MIN_LAUNCH_CYCLES,
    EndPoint,
    QualityInputs,
    StartPoint,
    clutter_check,
    expected_recorded,
    launch_check,
    quality_from_track,
    quality_variables,
    recovery_check,
    run_check,
    window_check,
)
from tests._quality_helpers import MODEL

TIMES0 = np.datetime64("2010-01-01", "ns")


def _inputs(toa, post, pred=None) -> QualityInputs:
    """No active source unless ``pred`` says otherwise (then variance 4 s^2 each)."""
    n = toa.shape[0]
    pred = np.full((n, 1), np.nan) if pred is None else pred
    cov = np.where(np.isfinite(pred), 4.0, 0.0)[:, :, None] * np.eye(pred.shape[1])
    times = TIMES0 + np.arange(n) * np.timedelta64(1, "D")
    return QualityInputs(toa, post, pred, cov, pred, MODEL, times, None, StartPoint(0, 0, None))


def _cycles(arrivals: list[int], clutter: list[float], r: int = 3):
    """Cycles with ``arrivals[t]`` of ``r`` ranks recorded (the rest empty), the posterior
    calling ``clutter[t]`` of them clutter (spread evenly) and the rest source 0."""
    n = len(arrivals)
    toa = np.full((n, r), np.nan)
    post = np.full((n, r, 2), np.nan)
    for t, (k, c) in enumerate(zip(arrivals, clutter, strict=True)):
        toa[t, :k] = 100.0 * (1 + np.arange(k))
        if k:
            post[t, :k, 1] = c / k
            post[t, :k, 0] = 1.0 - c / k
    return toa, post


def _e_clutter(r: int = 3) -> float:
    """E[min(Poisson(lambda), r)]: every recorded arrival of a cycle without active sources
    is clutter, so this is both E[C_t] and E[min(N_t, r)]."""
    k = np.arange(80)
    return float(np.sum(np.minimum(k, r) * stats.poisson.pmf(k, MODEL.clutter_rate)))


def test_clutter_excess_counts_partly_filled_cycles_and_skips_empty_ones():
    """Cycles with 1, 2, 3, 0 and 2 of 3 ranks recorded; a source active in the first two
    and the empty one (so their expected clutter shares differ from the others'). The
    expected share is taken over the four cycles with an arrival, partly filled or not
    (not the empty one), the observed share over the eight arrivals."""
    toa, post = _cycles([1, 2, 3, 0, 2], [1.0, 0.5, 3.0, 0.0, 2.0])
    pred = np.full((5, 1), np.nan)
    pred[[0, 1, 3], 0] = [150.0, 900.0, 400.0]
    check = clutter_check(_inputs(toa, post, pred))
    with_data = [0, 1, 2, 4]
    clutter, total = expected_recorded(
        pred[with_data], np.sqrt(MODEL.sigma**2 + np.full((4, 1), 4.0)), MODEL, 3
    )
    share = clutter.sum() / total.sum()
    n = 8
    assert check.value == pytest.approx((1.0 + 0.5 + 3.0 + 2.0) / n / share, rel=1e-12)
    mu = n * share
    assert check.threshold == pytest.approx(stats.poisson.ppf(0.999, 1.25 * mu) / mu, rel=1e-12)
    assert "of the 8 arrivals" in check.message


def test_clutter_window_scans_stretches_of_cycles_with_data_only():
    """Cycles with 3, 1, 0, 2, 1, 3 arrivals: the empty cycle is skipped (five cycles
    scanned: stretches 5 + 4 + 2), and each stretch's arrivals are counted as recorded."""
    toa, post = _cycles([3, 1, 0, 2, 1, 3], [0.0, 1.0, 0.0, 2.0, 1.0, 0.0])
    check = window_check(_inputs(toa, post))
    mu = 1.25 * _e_clutter()
    seen = [0.0, 1.0, 2.0, 1.0, 0.0]
    best, where = 0.0, None
    for length in (1, 2, 4):
        for k in range(len(seen) - length + 1):
            c = sum(seen[k : k + length])
            value = -math.log10(stats.gamma.cdf(mu * length, c)) if c > 0 else 0.0
            if value > best:
                best, where = value, (k, length)
    assert check.value == pytest.approx(best, rel=1e-5)  # E[C] by the midpoint rule
    assert check.threshold == pytest.approx(-math.log10(1e-3 / 11), rel=1e-12)
    assert where == (2, 1)  # the third cycle with data: row 3, two of its three ranks
    assert check.message.startswith("cycles 3 .. 3 (2010-01-04 .. 2010-01-04)")
    assert "calls 2.0 of 2 arrivals clutter" in check.message


def test_clutter_checks_not_computed_without_arrivals_or_expected_clutter():
    toa, post = _cycles([0, 0, 0], [0.0, 0.0, 0.0])
    assert window_check(_inputs(toa, post)).message == "not computed: no arrivals"
    # one cycle of one rank: the model expects 1 - exp(-1.5) = 0.78 recorded clutter
    toa, post = _cycles([1], [1.0], r=1)
    check = window_check(_inputs(toa, post))
    assert check.passed is None and "expects 0.8 clutter arrivals" in check.message
    assert clutter_check(_inputs(toa, post)).passed is None


def _point(offset_km, cov, extra_var) -> EndPoint:
    mean = np.array([-57.0, -90.0])
    lat, lon = tangent_step(mean[0], mean[1], offset_km[0], offset_km[1])
    return EndPoint(mean, np.asarray(cov, dtype=float), (float(lat), float(lon)), extra_var)


def test_launch_distance_by_hand_with_its_allowance():
    """``d = sqrt(D^T S^-1 D)``, ``S = C_0 + (extra + a^2) I`` with a correlated ``C_0``."""
    cov = np.array([[50.0, 20.0], [20.0, 30.0]])
    point = _point((25.0, -40.0), cov, 7.0)
    check = launch_check(StartPoint(12, MIN_LAUNCH_CYCLES, point))
    east, north = tangent_offsets(-57.0, -90.0, *point.fix)
    offset = np.array([float(east), float(north)])
    s = cov + (7.0 + LAUNCH_ALLOWANCE_KM**2) * np.eye(2)
    d = math.sqrt(offset @ np.linalg.solve(s, offset))
    assert check.value == pytest.approx(d, rel=1e-12)
    assert check.threshold == pytest.approx(math.sqrt(-2 * math.log(1e-4)), rel=1e-12)
    assert check.passed is (d <= check.threshold)
    assert f"{math.hypot(*offset):.1f} km from where the arrivals of the first 12 " in check.message
    largest = math.sqrt(np.linalg.eigvalsh(s).max())
    assert check.message.endswith(f"(largest {largest:.1f} km)")
    # the recovery check: the same distance without the allowance
    rec = recovery_check(point)
    s0 = cov + 7.0 * np.eye(2)
    assert rec.value == pytest.approx(math.sqrt(offset @ np.linalg.solve(s0, offset)), rel=1e-12)


def test_launch_distance_needs_enough_cycles_with_arrivals():
    point = _point((5.0, 5.0), np.eye(2), 1.0)
    at = launch_check(StartPoint(9, MIN_LAUNCH_CYCLES, point))
    assert at.passed is not None
    below = launch_check(StartPoint(9, MIN_LAUNCH_CYCLES - 1, point))
    assert below.passed is None and below.message == (
        f"not computed: {MIN_LAUNCH_CYCLES - 1} of the 9 cycles within 30 days of the launch "
        f"have arrivals (needs at least {MIN_LAUNCH_CYCLES})"
    )
    assert launch_check(StartPoint(9, 9, None)).passed is None


def test_a_confident_source_arrival_anywhere_in_the_cycle_breaks_the_run():
    """One confident arrival among unconfident ones (and clutter) suffices."""
    n = 4
    toa = np.full((n, 3), 300.0)
    post = np.zeros((n, 3, 3))
    post[:, :, 2] = 1.0  # clutter everywhere ...
    post[2, 1] = [0.0, 0.9, 0.1]  # ... but one arrival of cycle 2, exactly at CONFIDENT
    check = run_check(_inputs(toa, post, np.zeros((n, 2))))
    assert check.value == 2 and "(0 .. 1," in check.message


def test_check_outcomes_round_trip_with_their_codes():
    point = _point((5.0, 5.0), 100.0 * np.eye(2), 1.0)
    far = _point((500.0, 0.0), 100.0 * np.eye(2), 1.0)
    checks = (recovery_check(point), recovery_check(far), recovery_check(None))
    ds = quality_variables(checks)
    assert ds["quality_passed"].values.tolist() == [1, 0, -1]
    back = quality_from_track(ds)
    assert [c.passed for c in back] == [True, False, None]
    assert [c.message for c in back] == [c.message for c in checks]
    assert back[0].doc == CHECKS["recovery_distance"].doc


def test_window_surprise_of_no_clutter_is_zero_even_where_none_is_expected():
    from rankmodels.tracking.quality import MAX_SURPRISE, window_surprise

    got = window_surprise(np.array([0.0, 0.0, 2.0, 400.0]), np.array([0.0, 3.0, 1.0, 1e-3]))
    assert got[:2].tolist() == [0.0, 0.0]
    assert got[2] == pytest.approx(-math.log10(stats.poisson.sf(1, 1.0)), rel=1e-12)
    assert got[3] == MAX_SURPRISE


def test_clutter_window_reports_the_first_of_equally_surprising_stretches():
    """No clutter seen anywhere: every stretch has surprise 0; the one reported is the
    first scanned (cycle 0 alone), not a longer one of equal surprise."""
    toa, post = _cycles([3, 3, 3, 3], [0.0, 0.0, 0.0, 0.0])
    check = window_check(_inputs(toa, post))
    assert check.value == 0.0 and check.message.startswith("cycles 0 .. 0 ")


def test_innovation_rms_is_computed_from_exactly_min_matched_arrivals():
    from rankmodels.tracking.quality import MIN_MATCHED, innovation_check

    n = int(MIN_MATCHED)
    toa = np.full((n + 1, 1), 403.0)
    post = np.zeros((n + 1, 1, 2))
    post[:n, 0, 0] = 1.0  # exactly MIN_MATCHED arrivals surely from the source
    post[n, 0, 1] = 1.0
    pred = np.full((n + 1, 1), 400.0)
    check = innovation_check(_inputs(toa, post, pred))
    assert check.passed is not None
    assert check.value == pytest.approx(3.0 / math.sqrt(MODEL.sigma**2 + 4.0), rel=1e-12)
    post[0, 0] = [0.5, 0.5]
    assert innovation_check(_inputs(toa, post, pred)).passed is None
