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
