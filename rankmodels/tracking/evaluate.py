"""Scores of a track against the true track of a simulated record.

``position_error_km`` is the great-circle distance between the track's ``lat``/``lon`` (or
``lat_filtered``/``lon_filtered``) and the truth at every cycle; :func:`score_track`
summarises it with the association accuracy: the fraction of true arrivals (``true_label >=
0``) assigned to their source, and of clutter arrivals (``true_label ==``
:data:`~rankmodels.tracking.schema.CLUTTER`) called clutter.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from rankmodels.tracking.geometry import great_circle_km
from rankmodels.tracking.schema import CLUTTER

__all__ = ["position_error_km", "score_track"]


def position_error_km(
    track: xr.Dataset, truth: xr.Dataset, *, filtered: bool = False
) -> np.ndarray:
    """``(cycle,)`` distance (km) from the estimated to the true position."""
    suffix = "_filtered" if filtered else ""
    if track.sizes["cycle"] != truth.sizes["cycle"]:
        raise ValueError("track and truth have different numbers of cycles")
    return great_circle_km(
        track[f"lat{suffix}"].values,
        track[f"lon{suffix}"].values,
        truth["lat"].values,
        truth["lon"].values,
    )


def score_track(track: xr.Dataset, truth: xr.Dataset) -> dict[str, float]:
    """Median / 90th-percentile / max position error (km), for the track and for the forward
    filter, and the association accuracies (fractions): ``arrivals_right`` is NaN when the
    record holds no true arrival, ``clutter_called_clutter`` 1 when it holds no clutter."""
    err = position_error_km(track, truth)
    err_f = position_error_km(track, truth, filtered=True)
    label = truth["true_label"].values
    assoc = track["association"].values
    true_arr, clutter = label >= 0, label == CLUTTER
    return {
        "median_km": float(np.median(err)),
        "p90_km": float(np.percentile(err, 90)),
        "max_km": float(err.max()),
        "filtered_median_km": float(np.median(err_f)),
        "filtered_p90_km": float(np.percentile(err_f, 90)),
        "arrivals_right": float(np.mean(assoc[true_arr] == label[true_arr]))
        if true_arr.any()
        else float("nan"),
        "clutter_called_clutter": float(np.mean(assoc[clutter] == CLUTTER))
        if clutter.any()
        else 1.0,
    }
