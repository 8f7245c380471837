"""TrackConfig: every setting's documented range is enforced (boundaries in, beyond out, NaN
and infinities out) with an InputError naming the setting; the smoother's memory limit."""

from __future__ import annotations

import math

import pytest

from rankmodels.errors import InputError
from rankmodels.tracking.config import (
    HISTORY_BYTES_PER_PARTICLE,
    LIMITS,
    MAX_PARTICLES,
    TrackConfig,
    check_memory,
)

#: The ranges the docs state (docs/tracking.md, "The command line").
DOCUMENTED = {
    "sigma": (0.0, 600.0, True),
    "p_detect": (0.0, 1.0, True),
    "clutter_rate": (0.0, 100.0, False),
    "process_noise": (0.01, 200.0, False),
    "sound_speed": (1400.0, 1600.0, False),
    "particles": (1, 10_000_000, False),
}


@pytest.mark.parametrize("name", DOCUMENTED)
def test_limits_are_the_documented_ranges(name):
    lo, hi, lo_open = DOCUMENTED[name]
    limit = LIMITS[name]
    assert (limit.lo, limit.hi, limit.lo_open) == (lo, hi, lo_open)


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_boundaries_are_accepted_and_beyond_refused(name):
    limit = LIMITS[name]
    whole = name in ("particles", "ensemble")
    step = 1 if whole else 1e-9 * max(1.0, abs(limit.hi))
    cast = int if whole else float
    TrackConfig(**{name: cast(limit.hi)})
    if not limit.lo_open:
        TrackConfig(**{name: cast(limit.lo)})
    for bad in (limit.lo if limit.lo_open else limit.lo - step, limit.hi + step):
        with pytest.raises(InputError) as err:
            TrackConfig(**{name: cast(bad)})
        assert err.value.field == name and limit.text(name) in err.value.message
    if not whole:
        for bad in (math.nan, math.inf, -math.inf):
            with pytest.raises(InputError, match=name):
                TrackConfig(**{name: bad})


@pytest.mark.parametrize(
    ("name", "value"),
    [("particles", 2.5), ("particles", True), ("ensemble", "10"), ("sigma", "5"), ("seed", -1)],
)
def test_wrong_kinds_are_refused(name, value):
    with pytest.raises(InputError) as err:
        TrackConfig(**{name: value})
    assert err.value.field == name


def test_unknown_engine_is_named():
    with pytest.raises(InputError) as err:
        TrackConfig(engine="magic")
    assert err.value.field == "engine"
    TrackConfig(engine="minfactor")  # the full model: loss, clutter and multipath


def test_sound_speed_none_means_the_record_s():
    assert TrackConfig().sound_speed is None


def test_memory_limit_of_the_smoother_history():
    config = TrackConfig(particles=1000)
    budget = 50 * 1000 * HISTORY_BYTES_PER_PARTICLE
    check_memory(50, config, budget=budget)  # exactly at the budget
    with pytest.raises(InputError) as err:
        check_memory(51, config, budget=budget)
    assert err.value.field == "particles" and "at most 980 particles" in err.value.message
    check_memory(10**6, TrackConfig(particles=MAX_PARTICLES, smooth=False), budget=1)
