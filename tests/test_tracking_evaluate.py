"""score_track on hand-made tracks: the association accuracies count what they say, and a
record without true arrivals (or without clutter) gives NaN (or 1) without a warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from rankmodels.tracking.evaluate import score_track
from rankmodels.tracking.schema import CLUTTER


def _pair(label: np.ndarray, assoc: np.ndarray) -> tuple[xr.Dataset, xr.Dataset]:
    cycles = label.shape[0]
    lat, lon = np.linspace(10, 11, cycles), np.full(cycles, -50.0)
    position = {"lat": ("cycle", lat), "lon": ("cycle", lon)}
    track = xr.Dataset(
        {
            **position,
            "lat_filtered": ("cycle", lat),
            "lon_filtered": ("cycle", lon),
            "association": (("cycle", "arrival"), assoc),
        }
    )
    truth = xr.Dataset({**position, "true_label": (("cycle", "arrival"), label)})
    return track, truth


def test_accuracies_are_the_fractions_right():
    label = np.array([[0, 1, CLUTTER], [CLUTTER, 1, 0]])
    assoc = np.array([[0, 0, CLUTTER], [1, 1, 0]])
    score = score_track(*_pair(label, assoc))
    assert score["arrivals_right"] == pytest.approx(3 / 4)
    assert score["clutter_called_clutter"] == pytest.approx(1 / 2)
    assert score["median_km"] == 0.0


def test_no_true_arrival_gives_nan_and_no_clutter_gives_one_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        only_clutter = score_track(*_pair(np.full((3, 2), CLUTTER), np.zeros((3, 2), int)))
        no_clutter = score_track(*_pair(np.zeros((3, 2), int), np.zeros((3, 2), int)))
    assert np.isnan(only_clutter["arrivals_right"])
    assert only_clutter["clutter_called_clutter"] == 0.0
    assert no_clutter["clutter_called_clutter"] == 1.0
    assert no_clutter["arrivals_right"] == 1.0
