"""Numbers that the tracking figures and the report show, computed from a track dataset.

Track layout (see the tracking contract): ``association`` (cycle, rank) int with the most probable
source index, -1 = clutter, -2 = no arrival; ``association_prob`` (cycle, rank) its posterior
probability; optional ``association_posterior`` (cycle, rank, candidate) over sources + clutter;
``ess`` and ``loglik`` (cycle).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import xarray as xr

from rankmodels.tracking.evaluate import score_track

CLUTTER = -1
NO_ARRIVAL = -2
COLLAPSE_ESS = 1.5
"""A cycle counts as a filter collapse when the ESS after weighting is below this (one particle
carries essentially all the weight) or the predictive log-likelihood is not finite."""


@dataclass(frozen=True)
class SourceRow:
    """Association summary of one source (or of clutter, ``index == -1``)."""

    index: int
    name: str
    arrivals: int  # arrivals whose most probable origin is this candidate
    mean_prob: float  # mean association_prob over those arrivals (NaN if none)
    expected: float  # sum over all arrivals of P(origin = this candidate) (NaN if unavailable)


def attr_flag(attrs: Mapping[str, object], name: str) -> bool | None:
    """A 0/1, boolean or "true"/"yes" attribute as bool; None when absent."""
    if name not in attrs:
        return None
    value = attrs[name]
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    return bool(np.asarray(value).item())


def track_kind(track: xr.Dataset) -> str:
    """'smoothed track', 'filtered track' or, without a ``smoothed`` attribute, 'estimated
    track'."""
    smoothed = attr_flag(track.attrs, "smoothed")
    if smoothed is None:
        return "estimated track"
    return "smoothed track" if smoothed else "filtered track"


def source_names(track: xr.Dataset) -> list[str]:
    """Source names from the ``source`` coordinate (``str`` of each value)."""
    if "source" not in track.coords and "source" not in track:
        raise ValueError("track has no 'source' coordinate")
    return [str(v) for v in np.asarray(track["source"].values).ravel()]


def association_arrays(track: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """``association`` (cycle, rank) int (validated codes) and ``association_prob`` (cycle, rank)
    float."""
    for name in ("association", "association_prob"):
        if name not in track:
            raise ValueError(f"track has no {name!r} variable")
    labels = np.asarray(track["association"].transpose("cycle", "rank").values)
    probs = np.asarray(track["association_prob"].transpose("cycle", "rank").values, dtype=float)
    labels = np.where(np.isfinite(labels), labels, NO_ARRIVAL).astype(np.int64)
    n_sources = len(source_names(track))
    bad = (labels < NO_ARRIVAL) | (labels >= n_sources)
    if bad.any():
        raise ValueError(
            f"track 'association' holds {labels[bad][0]}; expected a source index in "
            f"[0, {n_sources}), -1 (clutter) or -2 (no arrival)"
        )
    return labels, probs


def source_table(track: xr.Dataset) -> list[SourceRow]:
    """One :class:`SourceRow` per source, then one for clutter (``index=-1``, name 'clutter')."""
    labels, probs = association_arrays(track)
    names = source_names(track)
    posterior = None
    if "association_posterior" in track:
        posterior = np.asarray(
            track["association_posterior"].transpose("cycle", "rank", "candidate").values,
            dtype=float,
        )
        if posterior.shape[-1] != len(names) + 1:
            raise ValueError(
                f"track 'association_posterior' has {posterior.shape[-1]} candidates; "
                f"expected {len(names) + 1} (sources + clutter)"
            )
    rows = []
    for index, name in [*enumerate(names), (CLUTTER, "clutter")]:
        mask = labels == index
        count = int(mask.sum())
        mean_prob = float(np.nanmean(probs[mask])) if count else float("nan")
        expected = float("nan")
        if posterior is not None:
            expected = float(np.nansum(posterior[..., index]))
        rows.append(SourceRow(index, name, count, mean_prob, expected))
    return rows


def arrival_count(track: xr.Dataset) -> int:
    """Number of recorded arrivals (association label other than 'no arrival')."""
    labels, _ = association_arrays(track)
    return int((labels != NO_ARRIVAL).sum())


def clutter_fraction(track: xr.Dataset) -> float:
    """Fraction of recorded arrivals whose most probable origin is clutter (NaN if none)."""
    labels, _ = association_arrays(track)
    recorded = labels != NO_ARRIVAL
    return float((labels[recorded] == CLUTTER).mean()) if recorded.any() else float("nan")


def collapsed_cycles(track: xr.Dataset) -> np.ndarray:
    """``(cycle,)`` bool: cycles where the particle filter collapsed.

    A ``collapsed`` (cycle) variable in the track, if present, is used as is. Otherwise a cycle
    counts as collapsed when ``ess < COLLAPSE_ESS`` or ``loglik`` is not finite (-inf: no particle
    could explain the arrivals).
    """
    if "collapsed" in track:
        return np.asarray(track["collapsed"].values, dtype=bool)
    n = track.sizes["cycle"]
    out = np.zeros(n, dtype=bool)
    if "ess" in track:
        ess = np.asarray(track["ess"].values, dtype=float)
        out |= np.isfinite(ess) & (ess < COLLAPSE_ESS)
    if "loglik" in track:
        out |= ~np.isfinite(np.asarray(track["loglik"].values, dtype=float))
    return out


def truth_comparison(track: xr.Dataset, truth: xr.Dataset) -> dict[str, str]:
    """The track against the truth of a simulated record (label -> shown value), from
    :func:`rankmodels.tracking.evaluate.score_track`: median / 90th percentile / largest
    great-circle distance (km) from the estimated to the true position, for the track and, when
    it is smoothed, for the forward filter alone; the share of the true arrivals
    (``true_label >= 0``) associated with their source and of the clutter arrivals
    (``true_label == -1``) called clutter.

    Raises ValueError when the datasets lack ``lat_filtered``/``lon_filtered`` (track) or
    ``lat``/``lon``/``true_label`` (truth), or their cycles / ranks differ.
    """
    for ds, what, names in (
        (track, "track", ("lat", "lon", "lat_filtered", "lon_filtered", "association")),
        (truth, "truth", ("lat", "lon", "true_label")),
    ):
        missing = [n for n in names if n not in ds]
        if missing:
            raise ValueError(f"{what} has no {', '.join(map(repr, missing))}")
    if truth.sizes["cycle"] != track.sizes["cycle"]:
        raise ValueError(
            f"truth has {truth.sizes['cycle']} cycles; the track has {track.sizes['cycle']}"
        )
    labels = np.asarray(truth["true_label"].values)
    if labels.shape != np.shape(track["association"].values):
        raise ValueError(
            f"truth 'true_label' has shape {labels.shape}; the track's 'association' has "
            f"{np.shape(track['association'].values)} (cycle, rank)"
        )
    scores = score_track(track, truth)
    kind = track_kind(track)
    rows = {
        f"Position error of the {kind}: median / 90th percentile / largest (km)": (
            f"{scores['median_km']:.1f} / {scores['p90_km']:.1f} / {scores['max_km']:.1f}"
        )
    }
    if kind == "smoothed track":
        rows["Position error of the forward filter: median / 90th percentile (km)"] = (
            f"{scores['filtered_median_km']:.1f} / {scores['filtered_p90_km']:.1f}"
        )
    true_arrivals = int((labels >= 0).sum())
    clutter = int((labels == CLUTTER).sum())
    rows["True arrivals associated with their source"] = (
        f"{100 * scores['arrivals_right']:.1f} % of {true_arrivals}" if true_arrivals else "–"
    )
    rows["Clutter arrivals called clutter"] = (
        f"{100 * scores['clutter_called_clutter']:.1f} % of {clutter}" if clutter else "–"
    )
    return rows
