"""Track a float: record -> particle filter (+ smoother) -> association posteriors -> track.

:func:`track_float` runs one function per stage ([Pareek2017] Algorithm 2 plus smoothing):

1. :func:`prepare`: cycle ``t`` is ``dt_t`` days after the previous one (the first after
   ``launch_time``); the particles start at the launch position and follow the tangent-plane
   random walk (:class:`~rankmodels.tracking.dynamics.RandomWalk`); the smoother's memory is
   checked;
2. :func:`run_filter`: the likelihood of cycle ``t`` at particle ``X`` comes from the chosen
   engine (:func:`rankmodels.tracking.engines.log_likelihood`) with the predicted TOAs
   ``pred_i(X) = d(X, b_i) / v_s + offset_i(t)`` of the sources active at that time
   (great-circle distance ``d``, sound speed ``v_s``, the written offset at that time with
   the source's clock drift, :func:`~rankmodels.tracking.records.written_offsets`; once
   calibrated, plus ``c_0 + c_1 t + delta_i``, :mod:`~rankmodels.tracking.calibration`);
   cycles without arrivals only predict; each position fix of the record is a step of its
   own at its time whose likelihood is ``N(fix; X, s^2 I_2)`` in km
   (:mod:`~rankmodels.tracking.fixes`), and with smoothing the recovery fix (if the record
   has one) is appended as a final such step (``s = s_r``);
3. :func:`smooth`: smoothed trajectories drawn backwards
   (:func:`~rankmodels.tracking.smoother.backward_simulate`), or the filter's resampled
   particles without smoothing: an equally weighted ensemble of ``M`` positions per cycle;
4. :func:`associate`: each arrival's association posterior ``P(R_j = i | data)`` is the
   ensemble average of the engine's per-position posteriors; the predicted TOAs of every
   source at the posterior mean;
5. :func:`assess`: the track quality checks (:mod:`~rankmodels.tracking.quality`) from the
   filter's one-step predictions (:func:`one_step_predictions`), its last cycle and the
   association posteriors;
6. :func:`~rankmodels.tracking.output.build_track` and :func:`summarise`.

With ``config.calibrate``, :func:`calibrate` first runs stages 2-4 as a Monte Carlo EM at
``config.em_particles()`` particles and the stages then run once more with the parameters
kept.

Time spent compiling numba kernels (on a first run, before they are cached) is measured with
numba's compile events and reported apart from the run time.
"""

from __future__ import annotations

import dataclasses
import math
import time as _time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import xarray as xr
from numba.core import event as numba_event

from rankmodels.errors import InputError
from rankmodels.tracking.calibration import (
    CLOCK_OFFSET_PRIOR_STD,
    DRIFT_PRIOR_STD,
    GEOMETRY_PARAMS,
    OFFSET_PRIOR_STD,
    SPEED_PRIOR_STD,
    Calibration,
    CalibrationResult,
    calibration_stages,
    geometry_log_prior,
    m_step,
    m_step_pairs,
)
from rankmodels.tracking.clock_readings import ClockReadings
from rankmodels.tracking.config import LIMITS, TrackConfig, check_memory
from rankmodels.tracking.dynamics import RandomWalk
from rankmodels.tracking.engines import LikelihoodResult, log_likelihood
from rankmodels.tracking.estimates import ParameterReport, parameter_reports
from rankmodels.tracking.filter import FilterResult, particle_filter
from rankmodels.tracking.fixes import MIN_STEP_DAYS, Fixes, Steps, filter_steps, fix_loglik
from rankmodels.tracking.geometry import (
    pairwise_distance_km,
    tangent_offsets,
    tangent_step,
    unit_vectors,
)
from rankmodels.tracking.launch import first_position, window_cycles
from rankmodels.tracking.model_fit import (
    STATISTICAL_PARAMS,
    FitInputs,
    StatisticalModel,
    fit_statistics,
)
from rankmodels.tracking.output import TrackEstimate, build_track
from rankmodels.tracking.quality import (
    EndPoint,
    QualityCheck,
    QualityInputs,
    StartPoint,
    quality_checks,
    recovery_check,
)
from rankmodels.tracking.records import active_sources, written_offsets
from rankmodels.tracking.schema import CLUTTER, NO_ARRIVAL
from rankmodels.tracking.signal_model import SignalModel
from rankmodels.tracking.smoother import backward_simulate

__all__ = [
    "LIMITS",
    "TrackConfig",
    "TrackSummary",
    "calibrate",
    "progress_steps",
    "track_float",
]

_DAY = np.timedelta64(86_400_000_000_000, "ns")
#: (east, north) km steps of the mean and its two finite-difference neighbours.
_STEP_E = np.array([0.0, 1.0, 0.0])
_STEP_N = np.array([0.0, 0.0, 1.0])

Progress = Callable[[int], None] | None


def progress_steps(record: xr.Dataset, config: TrackConfig) -> int:
    """Total of the ``progress(n)`` calls :func:`track_float` makes: filter steps (the cycles,
    the fixes and the recovery step, when used) and the association pass, once per EM iteration (at
    most :func:`em_passes`, the rest counted when the loop stops) and once for the final
    pass."""
    fixes = record.sizes.get("fix", 0) if "fix_time" in record else 0
    recovery = int(config.smooth and "recovery_time" in record)
    one_pass = 2 * record.sizes["cycle"] + fixes + recovery
    return one_pass * (1 + em_passes(config) * config.calibrate)


class _Cycles:
    """Per-cycle predicted TOAs and engine calls for one record (sources active at the time)."""

    def __init__(self, record: xr.Dataset, config: TrackConfig) -> None:
        self.toa = np.asarray(record["toa"].values, dtype=np.float64)
        self.has_data = ~np.isnan(self.toa).all(axis=1)
        # cycles where a message-passing engine (bp, minfactor) left a particle unconverged
        # in the filter: its likelihood there is the last sweep's, an approximation
        self.unconverged = np.zeros(self.toa.shape[0], dtype=bool)
        self.active = active_sources(record)
        self.src_xyz = unit_vectors(record["source_lat"].values, record["source_lon"].values)
        self.offset = written_offsets(record)  # (T, s)
        self.n_sources = self.offset.shape[1]
        self.nominal_speed = config.sound_speed or float(record["sound_speed"])
        self.km_per_s = self.nominal_speed / 1000.0
        self.day = _days(record["time"].values, record["launch_time"].values)
        self.shift: np.ndarray | None = None  # (T, s) c_0 + c_1 t + delta_i once calibrated
        self.clock = ClockReadings.from_record(record)
        if len(self.clock):  # the file's clock: the line through the measured offsets
            self.calibrate(Calibration.nominal(self.n_sources, self.nominal_speed, self.clock))
        self.model = SignalModel(
            sigma=config.sigma,
            p_detect=config.p_detect,
            clutter_rate=config.clutter_rate,
            window=float(record["window_length"]),
            multipath=config.multipath,
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
        rows, ranks = np.nonzero(labels >= 0)
        srcs = labels[rows, ranks]
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

    def calibrate(self, cal: Calibration) -> None:
        """Predict with ``cal``'s sound speed, clock and offset corrections from now on."""
        self.km_per_s = cal.sound_speed / 1000.0
        self.shift = cal.predicted_shift(self.day[:, None], np.arange(self.n_sources)[None, :])

    def distance(self, t: int, x: np.ndarray) -> np.ndarray:
        """``(N, s_active)`` great-circle distances (km) to the sources active at cycle ``t``."""
        act = self.active[t]
        return pairwise_distance_km(x[:, 0], x[:, 1], src_xyz=self.src_xyz[act])

    def predicted(self, t: int, x: np.ndarray) -> np.ndarray:
        """``(N, s_active)`` predicted TOAs (s) of the sources active at cycle ``t``."""
        act = self.active[t]
        pred = self.distance(t, x) / self.km_per_s + self.offset[t, act]
        return pred if self.shift is None else pred + self.shift[t, act]

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
        res = self.evaluate(t, x, association=False)
        self.unconverged[t] = res.converged is False
        return res.loglik

    def association(self, t: int, ensemble: np.ndarray) -> np.ndarray:
        """``(M, r, s + 1)`` posterior over (all sources, clutter) of each arrival given each
        of the ``M`` positions of ``ensemble``; NaN rows where nothing was recorded. Engines
        that give no association fall back to ``exact``."""
        n_src = self.active.shape[1]
        out = np.full((ensemble.shape[0], self.toa.shape[1], n_src + 1), np.nan)
        if not self.has_data[t]:
            return out
        res = self.evaluate(t, ensemble, association=True)
        post = res.association
        if post is None:
            post = self.evaluate(t, ensemble, association=True, engine="exact").association
        m = post.shape[1]  # post: (M, m, s_active + 1)
        out[:, :m] = 0.0
        out[:, :m, np.flatnonzero(self.active[t])] = post[:, :, :-1]
        out[:, :m, n_src] = post[:, :, -1]
        return out


def _days(a: np.ndarray, b: np.datetime64) -> np.ndarray:
    return (np.asarray(a).astype("datetime64[ns]") - np.datetime64(b, "ns")) / _DAY


@dataclass
class Run:
    """A record prepared for the stages: the filter's ``steps`` (the cycles and the position
    fixes in time order, then the recovery step when ``use_recovery``;
    :func:`~rankmodels.tracking.fixes.filter_steps`), the points the fix steps weigh by
    (``fix_points (K, 3)``: lat, lon, error km; the record's fixes, then the recovery fix with
    ``recovery_sigma``), ``cycle_dt`` (days from the previous cycle, the launch for the first),
    start ``x0`` (lat, lon), ``recovery`` (lat, lon) and ``days_to_recovery`` (None without a
    recovery fix) and ``n_fixes`` (the record's fixes, the recovery not counted);
    ``keep_members``: the association pass keeps the association given each trajectory
    (:attr:`Association.members`, which the EM's M-steps weigh by)."""

    config: TrackConfig
    cycles: _Cycles
    dynamics: RandomWalk
    times: np.ndarray
    steps: Steps
    fix_points: np.ndarray
    cycle_dt: np.ndarray
    x0: np.ndarray
    recovery: tuple[float, float] | None
    days_to_recovery: float | None
    use_recovery: bool
    n_fixes: int = 0
    fitted: StatisticalModel | None = None
    keep_members: bool = False

    @property
    def n_cycles(self) -> int:
        return self.times.size

    @property
    def dt(self) -> np.ndarray:
        """``(S,)`` days from each filter step to the one before (the launch for the first)."""
        return self.steps.dt

    @property
    def cycle_steps(self) -> np.ndarray:
        """``(T,)`` the filter step of each cycle."""
        return self.steps.cycle_steps

    @property
    def pass_steps(self) -> int:
        """``progress(1)`` calls of one pass: the filter steps and the association's cycles."""
        return self.dt.size + self.n_cycles

    def use_model(self, stats: StatisticalModel) -> None:
        """Track with ``stats``' signal model and random walk from now on (the config too,
        so that every later stage reads the fitted values)."""
        signal = stats.signal
        self.config = replace(
            self.config,
            sigma=signal.sigma,
            p_detect=signal.p_detect,
            clutter_rate=signal.clutter_rate,
            multipath=signal.multipath,
            process_noise=stats.process_noise,
        )
        self.cycles.model = signal
        self.dynamics = RandomWalk(stats.process_noise)
        self.fitted = stats

    def statistical_model(self) -> StatisticalModel:
        """The signal model and random walk the run uses now (with their estimates once
        :meth:`use_model` was given fitted ones)."""
        if self.fitted is not None:
            return self.fitted
        return StatisticalModel(self.cycles.model, self.config.process_noise)

    def loglik(self, k: int, x: np.ndarray) -> np.ndarray | None:
        """Filter step ``k``'s log-likelihood: its cycle's arrivals, or its fix's
        ``N(fix; X, s^2 I_2)`` (km; :func:`~rankmodels.tracking.fixes.fix_loglik`)."""
        cycle = self.steps.cycle[k]
        if cycle >= 0:
            return self.cycles.loglik(cycle, x)
        lat, lon, error = self.fix_points[self.steps.fix[k]]
        return fix_loglik(lat, lon, error, x)


def prepare(record: xr.Dataset, config: TrackConfig, *, keep_members: bool = False) -> Run:
    """Stage 1: the record's cycles, fixes, steps, start and recovery; checks that the
    smoother's particle history fits in memory
    (:func:`~rankmodels.tracking.config.check_memory`); ``keep_members`` for an EM's passes
    (:class:`Run`).

    Raises :class:`InputError`: ``source_label`` absent or labelling an inactive source with
    the labels engine, ``particles`` too many to smooth in memory."""
    cycles = _Cycles(record, config)
    times = np.asarray(record["time"].values).astype("datetime64[ns]")
    launch = record["launch_time"].values
    fixes = Fixes.from_record(record)
    steps = filter_steps(cycles.day, fixes.days_since(launch))
    points = np.column_stack([fixes.lat, fixes.lon, fixes.error])
    recovery, days_to_recovery = None, None
    if "recovery_time" in record:
        recovery = (float(record["recovery_lat"]), float(record["recovery_lon"]))
        days = _days(record["recovery_time"].values, times[-1]).item()
        days_to_recovery = max(days, MIN_STEP_DAYS)
    use_recovery = config.smooth and recovery is not None
    if use_recovery:
        steps = steps.append_fix(len(fixes), days_to_recovery)
        points = np.vstack([points, [*recovery, config.recovery_sigma]])
    check_memory(steps.dt.size, config)
    return Run(
        config=config,
        cycles=cycles,
        dynamics=RandomWalk(config.process_noise),
        times=times,
        steps=steps,
        fix_points=points,
        cycle_dt=np.maximum(np.diff(cycles.day, prepend=0.0), MIN_STEP_DAYS),
        x0=np.array([float(record["launch_lat"]), float(record["launch_lon"])]),
        recovery=recovery,
        days_to_recovery=days_to_recovery,
        use_recovery=use_recovery,
        n_fixes=len(fixes),
        keep_members=keep_members,
    )


def run_filter(run: Run, rng: np.random.Generator, progress: Progress = None) -> FilterResult:
    """Stage 2: the forward particle filter over the steps: the cycles and fixes (and the
    recovery step)."""
    config = run.config
    return particle_filter(
        run.x0,
        run.dt,
        run.loglik,
        run.dynamics,
        config.particles,
        rng,
        ess_threshold=config.ess_threshold,
        n_ensemble=0 if config.smooth else config.ensemble,
        keep_history=config.smooth,
        progress=progress,
    )


def smooth(
    run: Run, filt: FilterResult, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stage 3: ``ensembles (T, M, 2)``, ``mean (T, 2)`` and ``cov (T, 2, 2)`` km^2 of the
    smoothed trajectories at the cycles (the filter's, without smoothing); the trajectories
    pass through every filter step, so every fix shapes them. Frees the filter's history."""
    at = run.cycle_steps
    if not run.config.smooth:
        return filt.ensembles[at], filt.mean[at], filt.cov[at]
    traj = backward_simulate(
        filt.history_x,
        filt.history_logw,
        filt.history_parent,
        run.dt,
        run.dynamics,
        run.config.ensemble,
        rng,
    )[at]
    filt.history_x = filt.history_logw = filt.history_parent = None
    moments = [run.dynamics.moments(traj[t]) for t in range(run.n_cycles)]
    return traj, np.array([m for m, _ in moments]), np.array([c for _, c in moments])


def _trajectory_distances(run: Run, ensembles: np.ndarray) -> np.ndarray:
    """``(M, T, s)`` distance (km) from each smoothed trajectory to each active source, NaN
    where inactive, for the E-step."""
    cycles = run.cycles
    out = np.full((ensembles.shape[1], *cycles.active.shape), np.nan)
    for t in range(run.n_cycles):
        out[:, t, cycles.active[t]] = cycles.distance(t, ensembles[t])
    return out


@dataclass
class Association:
    """Stage 4's output: ``posterior (T, r, s + 1)`` the association posterior of each
    arrival, ``predicted_toa (T, s)`` at the posterior mean (NaN for inactive sources) and,
    when the run keeps them, ``members (T, M, r, s + 1)``: the association given each of the
    ``M`` smoothed trajectories (float32), whose mean over ``M`` is ``posterior``."""

    posterior: np.ndarray
    predicted_toa: np.ndarray
    members: np.ndarray | None = None


def associate(
    run: Run, ensembles: np.ndarray, mean: np.ndarray, progress: Progress = None
) -> Association:
    """Stage 4: association posteriors and predicted TOAs, cycle by cycle."""
    cycles = run.cycles
    n_src = cycles.active.shape[1]
    shape = (run.n_cycles, cycles.toa.shape[1], n_src + 1)
    posterior = np.empty(shape)
    members = (
        np.empty((shape[0], ensembles.shape[1], *shape[1:]), np.float32)
        if run.keep_members
        else None
    )
    predicted = np.full((run.n_cycles, n_src), np.nan)
    for t in range(run.n_cycles):
        given = cycles.association(t, ensembles[t])  # (M, r, s + 1)
        posterior[t] = given.mean(axis=0)
        if members is not None:
            members[t] = given
        predicted[t, cycles.active[t]] = cycles.predicted(t, mean[t][None, :])[0]
        if progress:
            progress(1)
    return Association(posterior, predicted, members)


class Pass:
    """Stages 2-4 once: the filter, the smoothed ``ensembles``, ``mean`` and ``cov``, and the
    association.

    The smoother and the association run when one of them is first read, under the run's
    parameters (sound speed, clock and offsets, signal model, random walk) of the filter pass
    and with the filter's generator where the filter left it, so that they equal an eager
    pass; an EM pass that is not kept only filters (its log-likelihood is all the EM reads).
    """

    def __init__(
        self, run: Run, filt: FilterResult, rng: np.random.Generator, progress: Progress
    ) -> None:
        self.filt = filt
        self._run = run
        self._pending: tuple | None = (run, _RunState.of(run), rng, progress)
        self._stages: tuple[np.ndarray, np.ndarray, np.ndarray, Association] | None = None
        self._distances: np.ndarray | None = None

    def _complete(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, Association]:
        if self._stages is None:
            run, state, rng, progress = self._pending  # type: ignore[misc]
            now = _RunState.of(run)
            state.restore(run)
            try:
                ensembles, mean, cov = smooth(run, self.filt, rng)
                self._stages = (ensembles, mean, cov, associate(run, ensembles, mean, progress))
            finally:
                now.restore(run)
            self._pending = None
        return self._stages

    @property
    def ensembles(self) -> np.ndarray:
        return self._complete()[0]

    @property
    def mean(self) -> np.ndarray:
        return self._complete()[1]

    @property
    def cov(self) -> np.ndarray:
        return self._complete()[2]

    @property
    def assoc(self) -> Association:
        return self._complete()[3]

    @property
    def distances(self) -> np.ndarray:
        """``(M, T, s)`` distances (km) from the ensemble's trajectories to the active sources
        (:func:`_trajectory_distances`), computed once however many M-steps read them."""
        if self._distances is None:
            self._distances = _trajectory_distances(self._run, self.ensembles)
        return self._distances

    def settle_progress(self) -> None:
        """Count the association's progress steps now (and not when it runs, if ever)."""
        if self._pending is not None and self._pending[3]:
            run, state, rng, progress = self._pending
            progress(run.n_cycles)
            self._pending = (run, state, rng, None)

    @property
    def loglik(self) -> float:
        """The particle estimate of ``log p(data)``: every filter step, fixes and recovery
        included."""
        return float(np.sum(self.filt.loglik))


@dataclass(frozen=True)
class _RunState:
    """What :meth:`_Cycles.calibrate` and :meth:`Run.use_model` change in a run."""

    config: TrackConfig
    km_per_s: float
    shift: np.ndarray | None
    model: SignalModel
    dynamics: RandomWalk
    fitted: StatisticalModel | None

    @classmethod
    def of(cls, run: Run) -> _RunState:
        c = run.cycles
        return cls(run.config, c.km_per_s, c.shift, c.model, run.dynamics, run.fitted)

    def restore(self, run: Run) -> None:
        run.config, run.dynamics, run.fitted = self.config, self.dynamics, self.fitted
        run.cycles.km_per_s, run.cycles.shift, run.cycles.model = (
            self.km_per_s, self.shift, self.model,
        )  # fmt: skip


def track_pass(run: Run, progress: Progress = None) -> Pass:
    """Stages 2-4 with a generator seeded ``config.seed``: every pass over the same record
    draws the same random numbers (common random numbers for the EM iterations). Stage 2 runs
    now; stages 3-4 when first read (:class:`Pass`)."""
    rng = np.random.default_rng(run.config.seed)
    return Pass(run, run_filter(run, rng, progress), rng, progress)


#: Most smoothed trajectories an EM pass draws (``ensemble`` caps it): the E-step averages
#: distances and the M-step's Louis correction a 15-parameter score over them, which 200
#: trajectories do as well as 500 (the sample: 1474.7 and 1475.1 m/s, 0.0213 and 0.0201
#: s/day, track 4.98 and 4.84 km median) at 0.6x the EM's cost.
EM_ENSEMBLE = 200
#: TOA-noise inflation factors of the calibration's first EM passes (annealing): with the
#: file's values far off (15 m/s of sound speed is 10 s at 1,000 km, 0.02 s/day of drift 8 s
#: after a year) the filter at the true ``sigma`` loses the float and its E-step is noise;
#: assuming ``4 sigma`` then ``2 sigma`` keeps the associations roughly right while the
#: M-steps bring the parameters close.
ANNEALING = (4.0, 2.0)
#: Hottest first annealing pass: while the first one's filter ends where the recovery fix
#: says the float was not (``recovery_distance`` fails: the file's values lost it), it runs
#: again at twice the factor, up to this many times ``sigma``, and the annealing comes down
#: from there by halves. On a 404-day noisy-world float (clutter 2, ``P_D`` 0.8, the sample's
#: mismatch; ``benchmarks/calibration.py``, seed 2) the 1,000-particle pass at ``4 sigma``
#: ended 660 km from the fix, its M-step turned the clock drift's sign and calibration kept
#: the file's values (29.5 / 204 km median / p90); annealed at 8, 4 and 2 ``sigma``, 3.5 /
#: 7.1 km. Started from the true ``sigma`` of 3 s it needed ``16 sigma`` (48, 24, 12, 6 s:
#: 3.6 / 7.8 km); jumping from 48 s to 6 s lost it again (30 / 499 km).
MAX_ANNEALING = 16.0


#: Rise of the penalised log-likelihood (nats) below which an M-step ends its stage: the
#: statistical parameters' EM creeps on by a nat or two a pass on long records, which moves
#: the track by far less than the Monte Carlo noise of the final pass.
MIN_GAIN = 2.0


#: The geometry groups the likelihood-ratio check of :func:`calibrate` tests, in order: the
#: least determined first.
TESTED_GROUPS = ("speed", "offsets", "drift")
#: A group whose estimate lies this many standard errors from its file values somewhere
#: (:meth:`~rankmodels.tracking.calibration.Calibration.largest_z`) skips the
#: likelihood-ratio check's pass: the quadratic approximation puts the drop at no less than
#: ``z^2 / 2 = 8`` nats, four times :data:`MIN_GAIN`. On the calibration benchmark's floats
#: (404 days, the scenarios of ``benchmarks/calibration.py``, seeds 1-2, 20 checks) the 8
#: checks with ``z >= 4`` (4.8-12.4) lowered it by 281-2569 nats; those under 4 by -315 to
#: 2417 (the standard errors carry the priors' and the confounded parameters' uncertainty,
#: so the rule is conservative).
DETERMINED_Z = 4.0


def likelihood_ratio_check(
    kept: int,
    theta_of: Callable[[int], Any],
    score_of: Callable[[int], float],
    largest_z: Callable[[Any, str], float],
    try_without: Callable[[int, str], int],
) -> int:
    """Step 3 of :func:`calibrate`, for one float or an experiment: for each geometry group
    of :data:`TESTED_GROUPS` that candidate ``kept``'s parameters ``theta_of(kept)``
    estimated less than :data:`DETERMINED_Z` standard errors from the file values
    (``largest_z(theta, group)``), ``try_without(kept, group)`` scores those parameters with
    the group back at the file values and returns the new candidate's index; when its
    penalised log-likelihood (``score_of``) is at most :data:`MIN_GAIN` nats below the kept
    one's, the records do not determine the group and the new candidate is kept (the next
    group is checked from there). Returns the index kept."""
    for group in TESTED_GROUPS:
        theta = theta_of(kept)
        if not theta.estimates(group) or largest_z(theta, group) >= DETERMINED_Z:
            continue
        new = try_without(kept, group)
        if score_of(kept) - score_of(new) <= MIN_GAIN:
            kept = new
    return kept


def em_passes(config: TrackConfig) -> int:
    """Most filter passes of :func:`calibrate`: the :data:`ANNEALING` passes (and two per
    level the first one may go hotter: the lost pass and one more level), the file's
    values and the annealed estimate, ``calibration_iterations`` M-steps per stage
    (:func:`~rankmodels.tracking.calibration.calibration_stages`) and one likelihood-ratio
    check per geometry group asked for."""
    stages = len(calibration_stages(config.calibrate_params))
    checks = len(set(TESTED_GROUPS) & config.calibrate_params)
    annealing = len(ANNEALING) + 2 * hotter_levels()  # each level: a lost pass, one more
    return annealing + 2 + stages * config.calibration_iterations + checks


def hotter_levels() -> int:
    """Most times the first annealing pass runs again at twice its factor
    (:data:`MAX_ANNEALING`)."""
    return max(round(math.log2(MAX_ANNEALING / ANNEALING[0])), 0)


def ended_lost(run: Run, filt: FilterResult) -> bool:
    """Whether the forward filter ``filt`` of ``run`` ends where the recovery fix says the
    float was not (the ``recovery_distance`` quality check fails; False without a fix)."""
    end = _end_point(run, filt)
    return end is not None and recovery_check(end).passed is False


def _trajectory_steps(run: Run, ensembles: np.ndarray) -> np.ndarray:
    """``(M, T, 2)`` (east, north) km steps of each smoothed trajectory, from the launch
    position to the first cycle and between consecutive cycles."""
    n_traj = ensembles.shape[1]
    lat = np.vstack([np.full((1, n_traj), run.x0[0]), ensembles[:, :, 0]])  # (T + 1, M)
    lon = np.vstack([np.full((1, n_traj), run.x0[1]), ensembles[:, :, 1]])
    east, north = tangent_offsets(lat[:-1], lon[:-1], lat[1:], lon[1:])
    return np.stack([east.T, north.T], axis=2)


def _em_step(
    run: Run,
    this: Pass,
    start: Calibration,
    params: frozenset[str],
    stats_start: StatisticalModel | None = None,
) -> tuple[Calibration, StatisticalModel]:
    """One M-step from the pass ``this`` (run with ``start`` and the run's statistical
    model): E-step pairs, then :func:`~rankmodels.tracking.calibration.m_step` for the
    geometry in ``params`` at the run's ``sigma`` and, given ``stats_start`` (the priors'
    centres), :func:`~rankmodels.tracking.model_fit.fit_statistics` for the statistical
    parameters in ``params``."""
    cycles = run.cycles
    distances = this.distances
    current = run.statistical_model()
    geometry = params & set(GEOMETRY_PARAMS)
    cal = start
    if geometry:
        pairs = m_step_pairs(
            cycles.toa,
            this.assoc.posterior,
            distances,
            cycles.day,
            cycles.offset,
            this.assoc.predicted_toa,
            cycles.model,
            this.assoc.members,
        )
        cal = m_step(
            **pairs,
            n_sources=cycles.n_sources,
            sound_speed=cycles.nominal_speed,
            sigma=cycles.model.sigma,
            offset_prior_std=OFFSET_PRIOR_STD,
            params=frozenset(geometry),
            start=start,
            speed_prior_std=SPEED_PRIOR_STD,
            clock_prior_std=CLOCK_OFFSET_PRIOR_STD,
            drift_prior_std=DRIFT_PRIOR_STD,
            clock_readings=cycles.clock,
        )
    statistical = params & set(STATISTICAL_PARAMS)
    if stats_start is None or not statistical:
        return cal, current
    shift = start.predicted_shift(cycles.day[:, None], np.arange(cycles.n_sources)[None, :])
    predicted = distances / (start.sound_speed / 1000.0) + cycles.offset + shift
    inputs = FitInputs(
        toa=cycles.toa,
        posterior=this.assoc.posterior,
        predicted=predicted,
        predicted_mean=this.assoc.predicted_toa,
        steps_km=_trajectory_steps(run, this.ensembles),
        dt=run.cycle_dt,
        members=this.assoc.members,
    )
    return cal, fit_statistics(inputs, current, stats_start, statistical)


def calibrate(
    record: xr.Dataset, config: TrackConfig, progress: Progress = None
) -> tuple[CalibrationResult, Pass]:
    """Monte Carlo EM for the clock, sound speed, source offsets and the statistical model.

    Every pass runs stages 2-4 at ``config.em_particles()`` particles (and at
    most :data:`EM_ENSEMBLE` smoothed trajectories) with the same seed (common random numbers,
    so passes differ only by their parameters); the E-step takes the association posteriors
    and the smoothed ensemble; the M-step is the weighted least squares of
    :func:`~rankmodels.tracking.calibration.m_step` for the geometry (priors
    :data:`~rankmodels.tracking.calibration.OFFSET_PRIOR_STD` and the clock's and speed's)
    and :func:`~rankmodels.tracking.model_fit.fit_statistics` for the statistical model
    (priors centred on the configured values). Parameters the record does not determine
    are held at their starting values.

    1. Annealing: one pass and M-step (the first stage's geometry) per factor of
       :data:`ANNEALING`, assuming that many times ``sigma``, from the file's values; a
       first pass whose filter ends away from the recovery fix (:func:`ended_lost`) runs
       again at twice the factor, up to :data:`MAX_ANNEALING`, and the annealing comes down
       from there by halves.
    2. At the configured ``sigma``: the file's values, then the annealed estimate, then
       M-steps in :func:`~rankmodels.tracking.calibration.calibration_stages` order (each
       also fitting the statistical parameters asked for), at most
       ``calibration_iterations`` per stage; a stage ends when the penalised log-likelihood
       (the particle log-likelihood plus the log priors of what was estimated) no longer
       rises (the next starts from the best iterate), and the loop when the last one does
       or the M-step cannot solve.

    3. Likelihood-ratio check: each geometry group of :data:`TESTED_GROUPS` that the best
       iterate estimated is put back to the file's values for one more pass; when that
       lowers the penalised log-likelihood by at most :data:`MIN_GAIN` nats, the record does
       not determine the group and the file's values are kept (on short records a sound
       speed known to a few m/s would move the track by kilometres for nothing). A group
       estimated :data:`DETERMINED_Z` standard errors or more from its file values is kept
       without the pass.

    The iterate with the largest penalised log-likelihood is kept (the file's and the
    configured values when nothing beats them), after the check. Returns the result and
    that iterate's pass.
    """
    cal_config = replace(
        config,
        particles=config.em_particles(),
        ensemble=min(config.ensemble, EM_ENSEMBLE),
    )
    run = prepare(record, cal_config, keep_members=True)
    cycles = run.cycles
    stages = calibration_stages(config.calibrate_params)
    start_stats = run.statistical_model()
    trace = [Calibration.nominal(cycles.n_sources, cycles.nominal_speed, cycles.clock)]
    models = [start_stats]
    sigmas: list[float] = []  # the sigma of each pass
    loglik: list[float] = []
    factors, hotter = list(ANNEALING), 0  # the annealing; first passes run again hotter
    while len(loglik) < len(factors):
        factor = factors[len(loglik)]
        hot = prepare(record, replace(cal_config, sigma=config.sigma * factor), keep_members=True)
        hot.cycles.calibrate(trace[-1])
        this = track_pass(hot, progress)
        if not loglik and 2 * factor <= MAX_ANNEALING and ended_lost(hot, this.filt):
            this.settle_progress()
            factors.insert(0, 2 * factor)  # hotter, then down by halves
            hotter += 1
            continue
        try:
            theta, _ = _em_step(hot, this, trace[-1], stages[0] & set(GEOMETRY_PARAMS))
        except ValueError:  # cannot solve even assuming a noisier TOA: start from the file's
            break
        sigmas.append(hot.config.sigma)
        loglik.append(this.loglik)
        trace.append(theta)
        models.append(start_stats)
    first = len(loglik)  # the first pass at the true sigma: the file's values, then ...
    if first:  # ... the annealed estimate
        trace.insert(first, trace[0])
        models.insert(first, start_stats)
    sigmas += [config.sigma] * (len(trace) - first)
    penalised: list[float] = []  # loglik + log priors, of the passes from `first` on
    passes: list[Pass] = []  # the passes at the true sigma (never read unless kept)

    def score(k: int) -> float:
        return penalised[k - first]

    stop = "iteration limit"
    best: Pass | None = None
    stage = steps = 0  # the stage and its M-steps so far
    kept = k = first  # the best iterate at the true sigma; this pass
    while True:
        cycles.calibrate(trace[k])
        run.use_model(models[k])
        this = track_pass(run, progress)
        passes.append(this)
        loglik.append(this.loglik)
        penalised.append(
            this.loglik
            + models[k].log_prior(start_stats)
            + geometry_log_prior(trace[k], cycles.nominal_speed, cycles.clock)
        )
        sigmas[k] = models[k].signal.sigma
        gain = score(k) - score(kept)
        if k == first or gain > 0:
            best, kept = this, k
        if k > first + 1 and gain <= MIN_GAIN:  # an M-step that barely helped: next stage
            if stage + 1 == len(stages):
                stop = "no longer rising"
                break
            stage, steps = stage + 1, 0
        if k + 1 < len(sigmas):  # the annealed estimate still to try
            k += 1
            continue
        if steps == config.calibration_iterations:
            if stage + 1 == len(stages):
                break
            stage, steps = stage + 1, 0
        run.use_model(models[kept])
        try:
            theta, stats = _em_step(run, best, trace[kept], stages[stage], start_stats)
        except ValueError as err:
            stop = str(err)
            break
        trace.append(theta)
        models.append(stats)
        sigmas.append(stats.signal.sigma)
        steps += 1
        k += 1

    def try_without(k: int, group: str) -> int:
        reduced = trace[k].without(group, cycles.nominal_speed, cycles.clock)
        cycles.calibrate(reduced)
        run.use_model(models[k])
        this = track_pass(run, progress)
        passes.append(this)
        trace.append(reduced)
        models.append(models[k])
        sigmas.append(models[k].signal.sigma)
        loglik.append(this.loglik)
        penalised.append(
            this.loglik
            + models[k].log_prior(start_stats)
            + geometry_log_prior(reduced, cycles.nominal_speed, cycles.clock)
        )
        return len(loglik) - 1

    kept = likelihood_ratio_check(
        kept,
        trace.__getitem__,
        score,
        lambda theta, group: theta.largest_z(group, cycles.nominal_speed, cycles.clock),
        try_without,
    )
    best = passes[kept - first]
    for this in passes:
        this.settle_progress()
    skipped = em_passes(config) - len(loglik) - hotter
    if progress and skipped > 0:
        progress(skipped * run.pass_steps)
    result = CalibrationResult(
        params=config.calibrate_params,
        trace=tuple(trace[: len(loglik)]),
        loglik=tuple(loglik),
        sigma=tuple(sigmas[: len(loglik)]),
        start=first,
        best=kept,
        stop=stop,
        particles=run.config.particles,
        models=tuple(models[: len(loglik)]),
    )
    return result, best  # type: ignore[return-value]


def one_step_predictions(run: Run, filt: FilterResult) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``(T, s)`` and covariance ``(T, s, s)`` of the active sources' noiseless TOAs
    predicted from the data before cycle ``t`` (NaN for inactive sources), linearised: the
    position predicted from the filter step before cycle ``t``'s (cycle ``t - 1`` or a fix) is
    ``N(m, P)``, ``P = C + q^2 dt I_2`` (filtered mean and covariance, the launch position
    with ``C = 0`` before the first step; eq. 5.1, ``q`` the filter's process noise), so the
    TOAs have mean ``pred_i(m)`` and covariance ``g_i^T P g_k`` with ``g_i`` the gradient of
    ``pred_i`` in s per km east and north (finite differences over 1 km). The linearisation
    matches the particle cloud's predictive variance to within 5 % (5-95 % range over a
    120-day float)."""
    cycles = run.cycles
    n_src = cycles.active.shape[1]
    mean = np.full((run.n_cycles, n_src), np.nan)
    cov = np.full((run.n_cycles, n_src, n_src), np.nan)
    before = run.cycle_steps - 1  # the step before each cycle's; -1: the launch
    prior_mean = np.vstack([run.x0, filt.mean])[before + 1]
    prior_cov = np.concatenate([np.zeros((1, 2, 2)), filt.cov])[before + 1]
    prior_cov = prior_cov + (run.dynamics.process_noise**2 * run.dt[run.cycle_steps])[
        :, None, None
    ] * np.eye(2)
    for t in range(run.n_cycles):
        lat, lon = tangent_step(
            np.full(3, prior_mean[t, 0]), np.full(3, prior_mean[t, 1]), _STEP_E, _STEP_N
        )
        pred = cycles.predicted(t, np.column_stack([lat, lon]))  # (3, s_active)
        grad = (pred[1:] - pred[0]).T  # (s_active, 2): s per km east, north
        act = np.flatnonzero(cycles.active[t])
        mean[t, act] = pred[0]
        cov[t, act[:, None], act[None, :]] = grad @ prior_cov[t] @ grad.T
    return mean, cov


#: Stream of the launch check's backward filter in the seed sequence ``(seed, stream)``.
_LAUNCH_STREAM = 1


def _start_point(run: Run) -> StartPoint:
    """The first cycle's position from the cycles within
    :data:`~rankmodels.tracking.launch.WINDOW_DAYS` of the launch, filtered backwards from a
    diffuse start about the launch fix (:func:`~rankmodels.tracking.launch.first_position`,
    seeded ``(config.seed, 1)``), and the launch fix it should predict over the first step
    ``dt_0`` (``q^2 dt_0 + s_r^2``, the fix's error taken as the recovery fix's)."""
    cycles = run.cycles
    k = window_cycles(cycles.day)
    with_arrivals = int(cycles.has_data[:k].sum())
    if k == 0:
        return StartPoint(0, 0, None)

    def loglik(t: int, x: np.ndarray) -> np.ndarray | None:
        if not cycles.has_data[t]:
            return None
        return cycles.evaluate(t, x, association=False).loglik

    rng = np.random.default_rng([run.config.seed, _LAUNCH_STREAM])
    mean, cov = first_position(run.x0, run.cycle_dt[:k], loglik, run.dynamics, rng)
    q2 = run.dynamics.process_noise**2
    point = EndPoint(
        mean=mean,
        cov=cov,
        fix=(float(run.x0[0]), float(run.x0[1])),
        extra_var=q2 * run.cycle_dt[0] + run.config.recovery_sigma**2,
    )
    return StartPoint(k, with_arrivals, point)


def _end_point(run: Run, filt: FilterResult) -> EndPoint | None:
    """The filter's last cycle and the recovery fix it should predict (None without one)."""
    if run.recovery is None:
        return None
    q2 = run.dynamics.process_noise**2
    last = run.cycle_steps[-1]
    return EndPoint(
        mean=filt.mean[last],
        cov=filt.cov[last],
        fix=run.recovery,
        extra_var=q2 * run.days_to_recovery + run.config.recovery_sigma**2,
    )


def assess(run: Run, filt: FilterResult, assoc: Association) -> tuple[QualityCheck, ...]:
    """Stage 5: the quality checks, from the record, the forward filter (its one-step
    predictions and its last cycle, under the filter's process noise), the early cycles
    filtered backwards without the launch fix, the association posteriors and the TOAs
    predicted at the posterior mean, under the run's signal model."""
    end = _end_point(run, filt)
    predicted_mean, predicted_cov = one_step_predictions(run, filt)
    return quality_checks(
        QualityInputs(
            toa=run.cycles.toa,
            association_posterior=assoc.posterior,
            predicted_mean=predicted_mean,
            predicted_cov=predicted_cov,
            smoothed_toa=assoc.predicted_toa,
            model=run.cycles.model,
            times=run.times,
            end=end,
            start=_start_point(run),
            fixes_used=run.n_fixes,
        )
    )


_TABLE_FIELDS = (
    "cycles",
    "cycles_without_data",
    "arrivals",
    "mean_ess",
    "clutter_fraction",
    "collapsed_cycles",
    "log_likelihood",
    "engine",
    "particles",
    "smoothed",
    "recovery_used",
    "run_time_s",
)


@dataclass(frozen=True)
class TrackSummary(Mapping[str, object]):
    """What a run did, for the command line's summary and the report.

    ``collapsed_cycles``: indices of cycles where every particle had zero likelihood;
    ``run_time_s``: the tracking without ``compile_time_s``, the time numba spent compiling
    kernels (a first run, before they are cached; 0 after); ``quality``: the quality checks;
    ``calibration``: the EM iterations (None without calibration); ``unconverged_cycles``:
    cycles where ``bp`` or ``minfactor`` left a particle unconverged within its sweep limit
    (its likelihood there is the last sweep's; always empty for the other engines);
    ``parameters``: what the track estimated and kept
    (:func:`~rankmodels.tracking.estimates.parameter_reports`); ``fixes_used``: the record's
    position fixes (the recovery not counted), which the filter and the smoother used;
    ``recovery_fix``: whether the record has a recovery fix.

    Also a read-only mapping of the scalar fields (the report's summary table reads it that
    way); ``quality``, ``compile_time_s`` and ``calibration`` are attributes only.
    """

    cycles: int
    cycles_without_data: int
    arrivals: int
    mean_ess: float
    clutter_fraction: float
    collapsed_cycles: list[int]
    log_likelihood: float
    engine: str
    particles: int
    smoothed: bool
    recovery_used: bool
    run_time_s: float
    compile_time_s: float
    quality: tuple[QualityCheck, ...]
    calibration: CalibrationResult | None = None
    unconverged_cycles: list[int] = dataclasses.field(default_factory=list)
    parameters: tuple[ParameterReport, ...] = ()
    fixes_used: int = 0
    recovery_fix: bool = True

    def __getitem__(self, key: str) -> object:
        if key not in _TABLE_FIELDS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_TABLE_FIELDS)

    def __len__(self) -> int:
        return len(_TABLE_FIELDS)

    @property
    def failed_checks(self) -> tuple[QualityCheck, ...]:
        """The quality checks that failed."""
        return tuple(c for c in self.quality if c.passed is False)


def summarise(
    run: Run,
    filt: FilterResult,
    track: xr.Dataset,
    checks: tuple[QualityCheck, ...],
    run_time_s: float,
    compile_time_s: float,
    calibration: CalibrationResult | None = None,
    parameters: tuple[ParameterReport, ...] = (),
) -> TrackSummary:
    """Stage 6: the run's :class:`TrackSummary`."""
    at = run.cycle_steps
    association = track["association"].values
    arrivals = association != NO_ARRIVAL
    return TrackSummary(
        cycles=run.n_cycles,
        cycles_without_data=int((~run.cycles.has_data).sum()),
        arrivals=int(arrivals.sum()),
        mean_ess=float(np.mean(filt.ess[at])),
        clutter_fraction=float(np.mean(association[arrivals] == CLUTTER)),
        collapsed_cycles=np.flatnonzero(filt.collapsed[at]).tolist(),
        log_likelihood=float(np.sum(filt.loglik[at])),
        engine=run.config.engine,
        particles=run.config.particles,
        smoothed=run.config.smooth,
        recovery_used=run.use_recovery,
        run_time_s=run_time_s,
        compile_time_s=compile_time_s,
        quality=checks,
        calibration=calibration,
        unconverged_cycles=np.flatnonzero(run.cycles.unconverged).tolist(),
        parameters=parameters,
        fixes_used=run.n_fixes,
        recovery_fix=run.recovery is not None,
    )


def _attributes(run: Run) -> dict[str, object]:
    config = run.config
    return {
        "engine": config.engine,
        "particles": config.particles,
        "seed": config.seed,
        "sigma": config.sigma,
        "p_detect": config.p_detect,
        "clutter_rate": config.clutter_rate,
        "multipath": config.multipath,
        "multipath_delay_s": run.cycles.model.multipath_delay,
        "sound_speed": run.cycles.nominal_speed,
        "window_length": run.cycles.model.window,
        "process_noise_km": config.process_noise,
        "smoothed": int(config.smooth),
        "recovery_used": int(run.use_recovery),
        "fixes_used": run.n_fixes,
        "ensemble": config.ensemble,
        "unconverged_cycles": int(run.cycles.unconverged.sum()),
    }


def track_float(
    record: xr.Dataset,
    config: TrackConfig | None = None,
    *,
    progress: Progress = None,
    calibration: CalibrationResult | None = None,
) -> tuple[xr.Dataset, TrackSummary]:
    """Track one float. ``record``: a validated float record
    (:func:`rankmodels.tracking.records.read_float`). Returns the track dataset (format in
    ``docs/tracking.md``, quality checks included) and a :class:`TrackSummary`.
    ``progress(1)`` is called :func:`progress_steps` times. ``calibration``: an EM run
    elsewhere (an experiment's joint calibration,
    :func:`rankmodels.tracking.experiment.calibrate_experiment`): the float is tracked with
    its kept parameters, as after its own calibration, and ``config.calibrate`` is not used.

    Raises :class:`InputError` (before any work) for hand labels the labels engine cannot use
    or a smoother history that does not fit in memory.
    """
    config = config or TrackConfig()
    run = prepare(record, config)
    start_model = run.statistical_model()
    compiling: list[float] = []
    started = _time.perf_counter()
    result, final = None, None
    used = Calibration.nominal(run.cycles.n_sources, run.cycles.nominal_speed, run.cycles.clock)
    with numba_event.install_timer("numba:compile", compiling.append):
        if calibration is not None:
            result, best = calibration, None
        elif config.calibrate:
            result, best = calibrate(record, config, progress)
        if result is not None:
            used = result.calibration
            if not result.kept_file_values:
                run.cycles.calibrate(used)
                run.use_model(result.statistical_model)
            if best is not None and result.particles == config.particles:  # the final pass
                final = best
                if progress:
                    progress(progress_steps(record, replace(config, calibrate=False)))
        final = final or track_pass(run, progress)
    filt, assoc = final.filt, final.assoc
    checks = assess(run, filt, assoc)
    at = run.cycle_steps
    estimate = TrackEstimate(
        mean=final.mean,
        cov=final.cov,
        filtered_mean=filt.mean[at],
        association_posterior=assoc.posterior,
        predicted_toa=assoc.predicted_toa,
        ess=filt.ess[at],
        loglik=filt.loglik[at],
        collapsed=filt.collapsed[at],
    )
    reports = parameter_reports(
        used, run.statistical_model(), start_model, result, run.cycles.nominal_speed
    )
    track = build_track(
        record,
        estimate,
        _attributes(run),
        quality=checks,
        calibration=used,
        trace=result,
        reports=reports,
    )
    compile_time = sum(compiling)
    run_time = _time.perf_counter() - started - compile_time
    summary = summarise(run, filt, track, checks, run_time, compile_time, result, reports)
    return track, summary
