"""Track a float: record -> particle filter (+ smoother) -> association posteriors -> track.

:func:`track_float` wires the pieces together (dissertation Algorithm 2 plus smoothing):

1. cycle ``t`` is ``dt_t`` days after the previous one (the first after ``launch_time``); the
   particles start at the launch position and follow the tangent-plane random walk
   (:class:`~rankmodels.tracking.dynamics.RandomWalk`);
2. the likelihood of cycle ``t`` at particle ``X`` comes from the chosen engine
   (:func:`rankmodels.tracking.engines.log_likelihood`) with the predicted TOAs
   ``pred_i(X) = d(X, b_i) / v_s + offset_i`` of the sources active at that time (great-circle
   distance ``d``, sound speed ``v_s``); cycles without arrivals only predict;
3. with smoothing, the recovery fix (if the record has one) is appended as a final step whose
   likelihood is ``N(recovery; X, s_r^2 I_2)`` in km, and smoothed trajectories are drawn
   backwards (:func:`~rankmodels.tracking.smoother.backward_simulate`);
4. each arrival's association posterior ``P(R_j = i | data)`` is the average, over an equally
   weighted ensemble of ``M`` positions (the smoothed trajectories, or a resample of the
   filter's weighted particles), of the engine's per-position posteriors.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.tracking.dynamics import RandomWalk
from rankmodels.tracking.engines import ENGINES, LikelihoodResult, log_likelihood
from rankmodels.tracking.filter import particle_filter
from rankmodels.tracking.geometry import pairwise_distance_km, tangent_offsets, unit_vectors
from rankmodels.tracking.output import TrackEstimate, build_track
from rankmodels.tracking.records import active_sources
from rankmodels.tracking.schema import CLUTTER, NO_ARRIVAL
from rankmodels.tracking.signal_model import SignalModel
from rankmodels.tracking.smoother import backward_simulate

__all__ = ["TrackConfig", "progress_steps", "track_float"]

_DAY = np.timedelta64(86_400_000_000_000, "ns")
_MIN_DT_DAYS = 1e-6


@dataclass(frozen=True)
class TrackConfig:
    """Tracker settings. Defaults are the paper's (sigma = 5 s, P_D = 0.9, P_C = 0.5).

    ``process_noise``: random-walk std per axis of a one-day step (km); ``smooth``: FFBSi with
    the recovery fix; ``ensemble``: size ``M`` of the smoothed-trajectory / association
    ensemble; ``recovery_sigma``: std (km) of the recovery fix; ``sound_speed``: m/s, ``None``
    = the record's ``sound_speed``; ``ess_threshold``: resample when ESS < threshold * N.
    """

    engine: str = "exact"
    particles: int = 10_000
    seed: int = 0
    sigma: float = 5.0
    p_detect: float = 0.9
    clutter_rate: float = 1.0
    process_noise: float = 8.0
    smooth: bool = True
    ensemble: int = 500
    recovery_sigma: float = 1.0
    sound_speed: float | None = None
    ess_threshold: float = 0.5

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"unknown engine {self.engine!r}; expected one of {ENGINES}")
        if self.particles < 1 or self.ensemble < 1:
            raise ValueError("particles and ensemble must be >= 1")
        if not self.recovery_sigma > 0:
            raise ValueError("recovery_sigma must be > 0 km")
        if self.sound_speed is not None and not self.sound_speed > 0:
            raise ValueError("sound_speed must be > 0 m/s")
        if self.engine == "minfactor" and (self.p_detect != 1 or self.clutter_rate != 0):
            raise ValueError(
                "engine minfactor is the no-loss, no-clutter model of section 5.2: "
                "it needs p_detect = 1 and clutter_rate = 0 (--pd 1 --clutter 0)"
            )


def progress_steps(record: xr.Dataset, config: TrackConfig) -> int:
    """Number of ``progress(1)`` calls :func:`track_float` makes: filter steps (the cycles and
    the recovery step, when used) and the association pass."""
    return 2 * record.sizes["cycle"] + int(config.smooth and "recovery_time" in record)


class _Cycles:
    """Per-cycle predicted TOAs and engine calls for one record (sources active at the time)."""

    def __init__(self, record: xr.Dataset, config: TrackConfig) -> None:
        self.toa = np.asarray(record["toa"].values, dtype=np.float64)
        self.has_data = ~np.isnan(self.toa).all(axis=1)
        self.active = active_sources(record)
        self.src_xyz = unit_vectors(record["source_lat"].values, record["source_lon"].values)
        self.offset = np.asarray(record["source_offset"].values, dtype=np.float64)
        speed = config.sound_speed or float(record["sound_speed"])
        self.km_per_s = speed / 1000.0
        self.model = SignalModel(
            sigma=config.sigma,
            p_detect=config.p_detect,
            clutter_rate=config.clutter_rate,
            window=float(record["window_length"]),
        )
        self.engine = config.engine
        self.labels = None
        if config.engine == "labels":
            if "source_label" not in record:
                raise InputError("needed by the labels engine but absent", field="source_label")
            self.labels = self._local_labels(np.asarray(record["source_label"].values))

    def _local_labels(self, labels: np.ndarray) -> np.ndarray:
        """Hand labels (global source index) -> column index among the active sources."""
        column = np.cumsum(self.active, axis=1) - 1
        out = labels.copy()
        src = labels >= 0
        rows, ranks = np.nonzero(src)
        srcs = labels[src]
        inactive = ~self.active[rows, srcs]
        if inactive.any():
            k = int(np.argmax(inactive))
            raise InputError(
                f"cycle {rows[k]}: labelled source {srcs[k]} is not active at that time "
                "(source_start_time/source_end_time)",
                field="source_label",
            )
        out[rows, ranks] = column[rows, srcs]
        return out

    def predicted(self, t: int, x: np.ndarray) -> np.ndarray:
        """``(N, s_active)`` predicted TOAs (s) of the sources active at cycle ``t``."""
        act = self.active[t]
        dist = pairwise_distance_km(x[:, 0], x[:, 1], src_xyz=self.src_xyz[act])
        return dist / self.km_per_s + self.offset[act]

    def evaluate(
        self, t: int, x: np.ndarray, *, association: bool, engine: str | None = None
    ) -> LikelihoodResult:
        """The engine's result for cycle ``t`` at positions ``x`` (N, 2)."""
        return log_likelihood(
            self.toa[t],
            self.predicted(t, x),
            self.model,
            engine=engine or self.engine,
            labels=None if self.labels is None else self.labels[t],
            association=association,
        )

    def loglik(self, t: int, x: np.ndarray) -> np.ndarray | None:
        """``(N,)`` log-likelihood of cycle ``t`` at particles ``x``; ``None`` without data."""
        if not self.has_data[t]:
            return None
        return self.evaluate(t, x, association=False).loglik

    def association(self, t: int, ensemble: np.ndarray) -> np.ndarray:
        """``(r, s + 1)`` posterior over (all sources, clutter) of each arrival; NaN rows where
        nothing was recorded. Engines that give no association fall back to ``exact``."""
        n_src = self.active.shape[1]
        out = np.full((self.toa.shape[1], n_src + 1), np.nan)
        if not self.has_data[t]:
            return out
        res = self.evaluate(t, ensemble, association=True)
        post = res.association
        if post is None:
            post = self.evaluate(t, ensemble, association=True, engine="exact").association
        mean = post.mean(axis=0)  # (m, s_active + 1)
        m = mean.shape[0]
        out[:m] = 0.0
        out[:m, np.flatnonzero(self.active[t])] = mean[:, :-1]
        out[:m, n_src] = mean[:, -1]
        return out


def _recovery_loglik(record: xr.Dataset, sigma_km: float) -> Callable[[np.ndarray], np.ndarray]:
    lat, lon = float(record["recovery_lat"]), float(record["recovery_lon"])

    def loglik(x: np.ndarray) -> np.ndarray:
        east, north = tangent_offsets(lat, lon, x[:, 0], x[:, 1])
        return -0.5 * (east**2 + north**2) / sigma_km**2 - np.log(2 * np.pi * sigma_km**2)

    return loglik


def _days(a: np.ndarray, b: np.datetime64) -> np.ndarray:
    return (np.asarray(a).astype("datetime64[ns]") - np.datetime64(b, "ns")) / _DAY


def track_float(
    record: xr.Dataset,
    config: TrackConfig | None = None,
    *,
    progress: Callable[[int], None] | None = None,
) -> tuple[xr.Dataset, dict[str, object]]:
    """Track one float. ``record``: a validated float record
    (:func:`rankmodels.tracking.records.read_float`). Returns the track dataset (format in
    ``docs/tracking.md``) and a summary dict (cycles, mean ESS, clutter fraction, collapsed
    cycles, run time in s, ...). ``progress(1)`` is called :func:`progress_steps` times.
    """
    config = config or TrackConfig()
    started = _time.perf_counter()
    rng = np.random.default_rng(config.seed)
    cycles = _Cycles(record, config)
    times = np.asarray(record["time"].values).astype("datetime64[ns]")
    t_days = _days(times, record["launch_time"].values)
    dt = np.maximum(np.diff(t_days, prepend=0.0), _MIN_DT_DAYS)
    x0 = np.array([float(record["launch_lat"]), float(record["launch_lon"])])
    n_cyc = times.size
    loglik = cycles.loglik
    use_recovery = config.smooth and "recovery_time" in record
    if use_recovery:
        recovery = _recovery_loglik(record, config.recovery_sigma)
        dt_end = _days(record["recovery_time"].values, times[-1]).item()
        dt = np.append(dt, max(dt_end, _MIN_DT_DAYS))

        def loglik(t: int, x: np.ndarray) -> np.ndarray | None:
            return recovery(x) if t == n_cyc else cycles.loglik(t, x)

    dynamics = RandomWalk(config.process_noise)
    filt = particle_filter(
        x0,
        dt,
        loglik,
        dynamics,
        config.particles,
        rng,
        ess_threshold=config.ess_threshold,
        n_ensemble=0 if config.smooth else config.ensemble,
        keep_history=config.smooth,
        progress=progress,
    )
    if config.smooth:
        traj = backward_simulate(
            filt.history_x,
            filt.history_logw,
            filt.history_parent,
            dt,
            dynamics,
            config.ensemble,
            rng,
        )[:n_cyc]
        filt.history_x = filt.history_logw = filt.history_parent = None
        moments = [dynamics.moments(traj[t]) for t in range(n_cyc)]
        mean = np.array([m for m, _ in moments])
        cov = np.array([c for _, c in moments])
    else:
        traj = filt.ensembles[:n_cyc]
        mean, cov = filt.mean[:n_cyc], filt.cov[:n_cyc]
    posterior = np.empty((n_cyc, cycles.toa.shape[1], cycles.active.shape[1] + 1))
    predicted = np.full((n_cyc, cycles.active.shape[1]), np.nan)
    for t in range(n_cyc):
        posterior[t] = cycles.association(t, traj[t])
        predicted[t, cycles.active[t]] = cycles.predicted(t, mean[t][None, :])[0]
        if progress:
            progress(1)
    estimate = TrackEstimate(
        mean=mean,
        cov=cov,
        filtered_mean=filt.mean[:n_cyc],
        association_posterior=posterior,
        predicted_toa=predicted,
        ess=filt.ess[:n_cyc],
        loglik=filt.loglik[:n_cyc],
        collapsed=filt.collapsed[:n_cyc],
    )
    attrs = {
        "engine": config.engine,
        "particles": config.particles,
        "seed": config.seed,
        "sigma": config.sigma,
        "p_detect": config.p_detect,
        "clutter_rate": config.clutter_rate,
        "sound_speed": cycles.km_per_s * 1000.0,
        "window_length": cycles.model.window,
        "process_noise_km": config.process_noise,
        "smoothed": int(config.smooth),
        "recovery_used": int(use_recovery),
        "ensemble": config.ensemble,
    }
    track = build_track(record, estimate, attrs)
    arrivals = track["association"].values != NO_ARRIVAL
    summary: dict[str, object] = {
        "cycles": n_cyc,
        "cycles_without_data": int((~cycles.has_data).sum()),
        "arrivals": int(arrivals.sum()),
        "mean_ess": float(np.mean(filt.ess[:n_cyc])),
        "clutter_fraction": float(np.mean(track["association"].values[arrivals] == CLUTTER)),
        "collapsed_cycles": np.flatnonzero(filt.collapsed[:n_cyc]).tolist(),
        "log_likelihood": float(np.sum(filt.loglik[:n_cyc])),
        "engine": config.engine,
        "particles": config.particles,
        "smoothed": config.smooth,
        "recovery_used": use_recovery,
        "run_time_s": _time.perf_counter() - started,
    }
    return track, summary
