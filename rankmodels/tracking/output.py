"""The track dataset written by ``track-float`` (``track.nc``; format in ``docs/tracking.md``).

:func:`build_track` turns the estimator's arrays into an :class:`xarray.Dataset` with dims
``cycle`` (coordinate ``time``), ``rank``, ``source``, ``candidate`` (the sources then
``"clutter"``), ``enu`` (``["east", "north"]``) and, after a calibration, ``iteration`` (its
EM trace); :func:`write_track` writes it compressed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import xarray as xr

from rankmodels import __version__
from rankmodels.tracking.calibration import Calibration, CalibrationResult
from rankmodels.tracking.cf import carried_attributes, conventions
from rankmodels.tracking.dynamics import M_PER_S
from rankmodels.tracking.estimates import ParameterReport, calibrated_names
from rankmodels.tracking.geometry import KM_PER_DEGREE
from rankmodels.tracking.motion_fit import K_M2_S, LagrangianStatistics
from rankmodels.tracking.netcdf import write_netcdf
from rankmodels.tracking.quality import QualityCheck, quality_variables
from rankmodels.tracking.records import compressed_encoding
from rankmodels.tracking.schema import CLUTTER, NO_ARRIVAL, TRACK, annotate

__all__ = ["STATISTICAL_TRACE", "TrackEstimate", "build_track", "write_track"]

#: The statistical parameters whose value in each EM pass the trace records (``sigma`` is
#: ``calibration_sigma``, which also records the annealing passes' inflated noise).
STATISTICAL_TRACE = ("p_detect", "clutter_rate", "multipath", "multipath_delay", "process_noise")


@dataclass
class TrackEstimate:
    """Estimator output for ``T`` cycles, ``r`` ranks, ``s`` sources.

    ``mean (T, 2)`` (lat, lon) posterior mean (smoothed when smoothing), ``cov (T, 2, 2)`` km^2
    (east, north), ``filtered_mean (T, 2)``, ``association_posterior (T, r, s + 1)`` (NaN where
    no arrival), ``predicted_toa (T, s)`` at the mean (NaN for inactive sources), ``ess``,
    ``loglik`` (log p(y_t | y_<t)) and ``collapsed`` ``(T,)``; with a velocity in the motion
    model ``velocity (T, 2)`` (east, north km/day) and ``velocity_std (T, 2)``, the smoothed
    trajectories' mean and standard deviation, and the float's ``lagrangian`` statistics.
    """

    mean: np.ndarray
    cov: np.ndarray
    filtered_mean: np.ndarray
    association_posterior: np.ndarray
    predicted_toa: np.ndarray
    ess: np.ndarray
    loglik: np.ndarray
    collapsed: np.ndarray
    velocity: np.ndarray | None = None
    velocity_std: np.ndarray | None = None
    lagrangian: LagrangianStatistics | None = None


def calibration_variables(
    used: Calibration,
    trace: CalibrationResult | None,
    reports: tuple[ParameterReport, ...] = (),
) -> tuple[dict[str, tuple], dict[str, object]]:
    """Variables and attributes of the parameters ``used`` and of the EM ``trace`` (None: not
    calibrated): ``source_offset_correction`` and one scalar per parameter of ``reports``
    (:func:`~rankmodels.tracking.estimates.parameter_reports`: ``sound_speed``,
    ``clock_offset``, ``clock_drift``, ``sigma``, ``p_detect``, ``clutter_rate``,
    ``multipath``, ``multipath_delay``, ``process_noise``), each with its ``_std`` (NaN where
    not estimated) and the attributes ``start``, ``status`` and ``status_reason`` (and, on
    ``sound_speed``, ``start_source``: ``sensors``, ``file`` or ``option``); the
    ``calibration_*`` trace over ``iteration``; and the attributes ``calibrated`` (what the
    track changed from its starting values, comma-separated, ``""`` for nothing),
    ``calibration_best_iteration``, ``calibration_stop`` and ``calibration_particles``."""
    out: dict[str, tuple] = {}
    for rep in reports:
        status = {"start": rep.start, "status": rep.status, "status_reason": rep.reason}
        if rep.start_source:
            status["start_source"] = rep.start_source
        out[rep.name] = ((), rep.value, status)
        out[f"{rep.name}_std"] = ((), rep.std)
    out["source_offset_correction"] = ("source", used.source_offset_correction)
    out["source_offset_correction_std"] = ("source", used.source_offset_correction_std)
    if trace is None:
        return out, {"calibrated": ""}
    out["calibration_loglik"] = ("iteration", np.array(trace.loglik))
    out["calibration_sigma"] = ("iteration", np.array(trace.sigma))
    for name in ("sound_speed", "clock_offset", "clock_drift"):
        out[f"calibration_{name}"] = (
            "iteration",
            np.array([getattr(c, name) for c in trace.trace]),
        )
    out["calibration_source_offset_correction"] = (
        ("iteration", "source"),
        np.array([c.source_offset_correction for c in trace.trace]),
    )
    for name in STATISTICAL_TRACE:
        out[f"calibration_{name}"] = ("iteration", np.array([m.value(name) for m in trace.models]))
    attrs = {
        "calibrated": ",".join(calibrated_names(reports, used)),
        "calibration_best_iteration": trace.best,
        "calibration_stop": trace.stop,
        "calibration_particles": trace.particles,
    }
    return out, attrs


def _most_probable_association(post: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each arrival's arg-max label and its probability from ``post`` (cycle, rank, s + 1;
    column s clutter, NaN where there is no arrival): labels 0 .. s-1, ``CLUTTER`` or
    ``NO_ARRIVAL`` (cycle, rank), and the probability (NaN where no arrival)."""
    no_arrival = np.isnan(post).all(axis=2)
    best = np.where(no_arrival, 0, np.argmax(np.nan_to_num(post, nan=-1.0), axis=2))
    n_src = post.shape[2] - 1
    association = np.where(no_arrival, NO_ARRIVAL, np.where(best == n_src, CLUTTER, best))
    prob = np.where(no_arrival, np.nan, np.take_along_axis(post, best[..., None], 2)[..., 0])
    return association, prob


def build_track(
    record: xr.Dataset,
    est: TrackEstimate,
    attrs: dict[str, object],
    quality: tuple[QualityCheck, ...] = (),
    calibration: Calibration | None = None,
    trace: CalibrationResult | None = None,
    reports: tuple[ParameterReport, ...] = (),
) -> xr.Dataset:
    """The track dataset of ``record`` (a validated float record) from ``est``; ``attrs``
    (model parameters, engine, ...) are added to the standard ones. Variables, units and
    label sentinels: ``schema.TRACK``. The ``quality`` checks become the ``quality_*``
    variables (:func:`~rankmodels.tracking.quality.quality_variables`) and the attribute
    ``quality_failed`` (how many failed). ``calibration``: the parameters the predictions
    used (:func:`calibration_variables`; None: no such variables), ``trace``: the EM
    iterations that chose them (None: not calibrated), ``reports`` each scalar parameter's
    value, standard error and status. The record's ``source_drift`` and position fixes
    (``fix_*``, used by the filter and the smoother) are copied."""
    post = est.association_posterior
    association, prob = _most_probable_association(post)
    lat_std = np.sqrt(est.cov[:, 1, 1]) / KM_PER_DEGREE
    lon_std = np.sqrt(est.cov[:, 0, 0]) / (KM_PER_DEGREE * np.cos(np.radians(est.mean[:, 0])))
    sources = [str(s) for s in record["source"].values]
    ds = xr.Dataset(
        {
            "lat": ("cycle", est.mean[:, 0]),
            "lon": ("cycle", est.mean[:, 1]),
            "lat_std": ("cycle", lat_std),
            "lon_std": ("cycle", lon_std),
            "position_cov": (("cycle", "enu", "enu2"), est.cov),
            "lat_filtered": ("cycle", est.filtered_mean[:, 0]),
            "lon_filtered": ("cycle", est.filtered_mean[:, 1]),
            "association": (("cycle", "rank"), association.astype(np.int16)),
            "association_prob": (("cycle", "rank"), prob),
            "association_posterior": (("cycle", "rank", "candidate"), post),
            "toa": (("cycle", "rank"), np.asarray(record["toa"].values, dtype=np.float64)),
            "predicted_toa": (("cycle", "source"), est.predicted_toa),
            "ess": ("cycle", est.ess),
            "loglik": ("cycle", est.loglik),
            "collapsed": ("cycle", est.collapsed.astype(np.int8)),
            "source_lat": ("source", np.asarray(record["source_lat"].values, dtype=float)),
            "source_lon": ("source", np.asarray(record["source_lon"].values, dtype=float)),
        },
        coords={
            "time": ("cycle", np.asarray(record["time"].values).astype("datetime64[ns]")),
            "source": ("source", sources),
            "candidate": ("candidate", [*sources, "clutter"]),
            "enu": ("enu", ["east", "north"]),
            "enu2": ("enu2", ["east", "north"]),
        },
    )
    for name in ("temperature", "pressure"):
        if name in record:
            ds[name] = record[name].reset_coords(drop=True)
    drift = record["source_drift"].values if "source_drift" in record else np.zeros(len(sources))
    ds["source_drift"] = ("source", np.asarray(drift, dtype=float))
    if "fix_time" in record:  # the fixes the filter and the smoother used
        for name in ("fix_time", "fix_lat", "fix_lon", "fix_error"):
            ds[name] = ("fix", np.asarray(record[name].values))
    ds.attrs = {
        "float_id": str(record.attrs.get("float_id", "")),
        "source_file": str(record.encoding.get("source", record.attrs.get("source_file", ""))),
        **carried_attributes(record),
        **attrs,
        "rankmodels_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if record.attrs.get("simulated"):
        ds.attrs["simulated"] = 1
    if calibration is not None:
        variables, calibration_attrs = calibration_variables(calibration, trace, reports)
        ds = ds.assign(variables)
        ds.attrs.update(calibration_attrs)
    if est.velocity is not None:
        ds = ds.assign(velocity_variables(est))
    if quality:
        ds = ds.merge(quality_variables(quality), combine_attrs="drop_conflicts")
        ds.attrs["quality_failed"] = sum(c.passed is False for c in quality)
    return annotate(ds, TRACK)


def velocity_variables(est: TrackEstimate) -> dict[str, tuple]:
    """``velocity_east``/``_north`` and their ``_std`` (cycle, m/s) and, when the float's
    Lagrangian statistics were estimated, ``eddy_kinetic_energy`` (m^2/s^2) and
    ``diffusivity`` (m^2/s) with their ``_std``."""
    out: dict[str, tuple] = {}
    for k, axis in enumerate(("east", "north")):
        out[f"velocity_{axis}"] = ("cycle", est.velocity[:, k] * M_PER_S)
        out[f"velocity_{axis}_std"] = ("cycle", est.velocity_std[:, k] * M_PER_S)
    stats = est.lagrangian
    if stats is not None:
        for name, value, std, scale in (
            ("eddy_kinetic_energy", stats.eke, stats.eke_std, M_PER_S**2),
            ("diffusivity", stats.diffusivity, stats.diffusivity_std, K_M2_S),
        ):
            out[name] = ((), value * scale)
            out[f"{name}_std"] = ((), std * scale)
    return out


def write_track(track: xr.Dataset, path: str | os.PathLike[str]) -> None:
    """Write the track as compressed NetCDF4 with its CF 1.8 / ACDD 1.3 metadata
    (:func:`~rankmodels.tracking.cf.conventions`)."""
    track = conventions(track, "track", f"track-float {track.attrs.get('source_file', '')}")
    write_netcdf(track, path, compressed_encoding(track))
