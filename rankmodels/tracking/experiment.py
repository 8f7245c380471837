"""Joint calibration of an experiment: the floats that hear the same sources, calibrated
together by one Monte Carlo EM (the model and the pooled M-step: :mod:`~rankmodels.tracking.
joint`).

Shared: the sound speed, each source's offset correction and clock-drift correction. Per
float: its clock offset and drift and its statistical model (TOA noise, detection, clutter,
multipath, process noise; :mod:`~rankmodels.tracking.model_fit`). The shared sound speed
starts at ``config.sound_speed`` or the mean of the floats' starting speeds
(:func:`~rankmodels.tracking.sound_speed.starting_sound_speed`: a float's temperature and
pressure where it recorded them, else its file's ``sound_speed``).

Each pass of :func:`calibrate_experiment` is

1. *E-step, float by float* (:func:`float_e_step`; one task per float on the Dask workers of
   batch mode, or serially): the float's filter, smoother and association pass
   (:func:`~rankmodels.tracking.passes.run_pass`) with the current shared values and its
   own clock and model, at the experiment's EM particles (``calibration_particles``,
   default :data:`~rankmodels.tracking.config.EXPERIMENT_EM_PARTICLES`) and the same seed
   every pass; from it the float's
   :class:`~rankmodels.tracking.calibration.ResidualStatistics` of the geometry
   (:func:`~rankmodels.tracking.joint.float_design`), its particle log-likelihood, the
   expected direct arrivals of each source it heard, and (at the configured noise) the
   M-step of its statistical model, which is the float's own;
2. *M-step, pooled*: the floats' statistics summed (:func:`~rankmodels.tracking.joint.pool`)
   and one penalised Newton step for the shared and per-float geometry
   (:func:`~rankmodels.tracking.joint.joint_m_step`).

The search is one float's (:mod:`~rankmodels.tracking.em`, with the experiment as its
:class:`ExperimentProblem`): two annealing passes at ``4 sigma`` and ``2 sigma`` first (the
first at twice the factor while any float's filter ends away from its recovery fix, up to
:data:`~rankmodels.tracking.em.MAX_ANNEALING`, then down by halves), then the files' values
and the annealed estimate at the configured noise, then M-steps until the experiment's
penalised log-likelihood (the sum of the floats' particle log-likelihoods and every prior)
rises by at most :data:`~rankmodels.tracking.em.MIN_GAIN` nats or ``calibration_iterations``
M-steps were taken; the pass with the largest penalised log-likelihood is kept, after the
same likelihood-ratio check (the speed, the sources' corrections, the floats' clocks each
put back to the file values unless the floats determine them). The geometry is fitted in
one stage: pooled floats separate the speed from the offsets, which one float cannot.

*Extrapolated steps.* Along the ridge where a faster speed, larger offsets and tracks moved
outwards predict nearly the same arrivals, the smoothed tracks follow whatever speed the pass
ran with, so the Monte Carlo missing information (Louis) matches or exceeds the complete
information, and the Newton step goes only as far as the floor of the observed share
allows (:data:`~rankmodels.tracking.joint.MIN_POOLED_SHARE`; at one float's 0.3 it went
2.6 % of the way on a 20-float, 300-day DIMES replay). So when an M-step's proposal raises
the penalised log-likelihood, the next candidate goes
:data:`~rankmodels.tracking.em.EXTRAPOLATION` times as far along the same step, and again
while each rises, up to :data:`~rankmodels.tracking.em.MAX_REACH` times; the
particle log-likelihoods (common random numbers) decide, as for every candidate.

*Polish and Monte Carlo error.* The search judges candidates by particle log-likelihoods,
whose Monte Carlo noise (several nats from pass to pass) exceeds the differences along the
ridge, so where it stops moves with the random numbers by more than the E-step's score noise
would move the likelihood's maximum. The derivatives locate that maximum far better, so the
end point is polished (:func:`_polish`): the kept candidate runs again with the next seed,
the M-step from the two passes' averaged statistics gives a Newton step, two passes at its
end give the derivative there, and the end point moves along the step to where the
derivative of the penalised log-likelihood, interpolated between the two points, is zero.
Its Monte Carlo covariance (:func:`~rankmodels.tracking.joint.monte_carlo_covariance`, from
the floats' score differences between the passes) joins the standard errors.

The floats must agree on their sources: a source name at two positions more than
:data:`SAME_POSITION_KM` apart is refused (:func:`experiment_sources`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from rankmodels.errors import InputError
from rankmodels.files import atomic_output
from rankmodels.threads import numba_threads, prepare_environment
from rankmodels.tracking import em
from rankmodels.tracking.assessment import ended_lost
from rankmodels.tracking.batch import float_folders, read_record, worker_threads
from rankmodels.tracking.calibration import (
    GEOMETRY_PARAMS,
    CalibrationResult,
    ResidualStatistics,
    m_step_pairs,
)
from rankmodels.tracking.checkpoint import PassStore
from rankmodels.tracking.clock_readings import ClockReadings
from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.float_calibration import float_m_step
from rankmodels.tracking.geometry import great_circle_km
from rankmodels.tracking.joint import (
    JointLayout,
    JointParameters,
    float_design,
    joint_log_prior,
    joint_m_step,
    monte_carlo_covariance,
    pool,
    replicated_score,
)
from rankmodels.tracking.model_fit import STATISTICAL_PARAMS, StatisticalModel
from rankmodels.tracking.passes import run_pass
from rankmodels.tracking.prepared import Parameters, prepare, start_parameters, tracked_record
from rankmodels.tracking.records import source_days
from rankmodels.tracking.shared import FloatCalibration, with_drift_correction
from rankmodels.tracking.sound_speed import starting_sound_speed

__all__ = [
    "MIN_EVIDENCE",
    "SAME_POSITION_KM",
    "SOURCES_FILE",
    "SOURCE_COLUMNS",
    "ExperimentProblem",
    "ExperimentResult",
    "ExperimentSources",
    "FloatPass",
    "calibrate_experiment",
    "experiment_passes",
    "experiment_sources",
    "float_e_step",
    "pass_settings",
    "read_records",
    "shared_summary",
    "source_table",
    "write_sources",
]

#: Farthest apart (km) two floats may place the same source name: positions written with
#: three decimals of a degree differ by up to about 0.1 km.
SAME_POSITION_KM = 1.0
#: Expected direct arrivals from a source for a float to count as having heard it.
MIN_EVIDENCE = 1.0

Progress = Callable[[int], None] | None


@dataclass(frozen=True)
class ExperimentSources:
    """The experiment's sources by name: ``names``, ``lat``, ``lon`` ``(S,)`` (first
    appearance over the floats) and, per float, the global index of each of its record's
    sources (``of_float[f] (s_f,)``)."""

    names: tuple[str, ...]
    lat: np.ndarray
    lon: np.ndarray
    of_float: tuple[np.ndarray, ...]


def experiment_sources(records: Mapping[str, xr.Dataset]) -> ExperimentSources:
    """The sources of the floats ``records`` (name -> validated record). Raises
    :class:`~rankmodels.errors.InputError` when two floats place a source name more than
    :data:`SAME_POSITION_KM` apart, naming both floats, the source and the distance."""
    names: list[str] = []
    where: dict[str, tuple[float, float, str]] = {}
    of_float = []
    for float_name, record in records.items():
        index = []
        lats = np.asarray(record["source_lat"].values, dtype=float)
        lons = np.asarray(record["source_lon"].values, dtype=float)
        for source, lat, lon in zip(record["source"].values, lats, lons, strict=True):
            source = str(source)
            if source not in where:
                where[source] = (float(lat), float(lon), float_name)
                names.append(source)
            lat0, lon0, first = where[source]
            apart = float(great_circle_km(lat0, lon0, lat, lon))
            if apart > SAME_POSITION_KM:
                raise InputError(
                    f"floats {first} and {float_name} place source {source} {apart:.1f} km "
                    f"apart (({lat0:g}, {lon0:g}) and ({lat:g}, {lon:g})); one experiment "
                    f"needs one position per source name (at most {SAME_POSITION_KM:g} km "
                    "apart)",
                    field="source_lat",
                )
            index.append(names.index(source))
        of_float.append(np.array(index, dtype=int))
    return ExperimentSources(
        names=tuple(names),
        lat=np.array([where[n][0] for n in names]),
        lon=np.array([where[n][1] for n in names]),
        of_float=tuple(of_float),
    )


@dataclass(frozen=True)
class FloatPass:
    """One float's E-step (:func:`float_e_step`): the geometry's ``statistics`` over its
    columns (:func:`~rankmodels.tracking.joint.float_design`), the particle ``loglik``, the
    statistical ``model`` the pass ran with and ``fitted`` (its M-step; the same model when
    not fitted), ``start`` (the configured model, the priors' centre), and ``arrivals (s_f,)``
    the expected direct arrivals of each of its sources; ``lost``: its filter ended where the
    recovery fix says the float was not (:func:`~rankmodels.tracking.assessment.ended_lost`)."""

    statistics: ResidualStatistics
    loglik: float
    model: StatisticalModel
    fitted: StatisticalModel
    start: StatisticalModel
    arrivals: np.ndarray
    lost: bool = False


def pass_settings(config: TrackConfig) -> TrackConfig:
    """The EM passes' settings: the experiment's EM particles
    (:meth:`~rankmodels.tracking.config.TrackConfig.em_particles`), at most
    :data:`~rankmodels.tracking.em.EM_ENSEMBLE` trajectories."""
    return replace(
        config,
        particles=config.em_particles(experiment=True),
        ensemble=min(config.ensemble, em.EM_ENSEMBLE),
    )


def float_e_step(
    file: str | os.PathLike[str],
    config: TrackConfig,
    theta: JointParameters,
    f: int,
    sources: np.ndarray,
    model: StatisticalModel | None,
    factor: float = 1.0,
    fit: bool = True,
) -> FloatPass:
    """The E-step of float ``f`` (its record in ``file``, global source indices
    ``sources``) at the experiment's ``theta`` with its statistical ``model`` (None: the
    configured one), the TOA noise inflated by ``factor`` (annealing); with ``fit``, the
    M-step of the statistical parameters ``config.calibrate_params`` names."""
    record, _ = read_record(file, labels_required=config.engine == "labels")
    record = with_drift_correction(record, theta.drift_correction[sources])
    settings = pass_settings(config)
    prepared = prepare(tracked_record(record, settings), settings)
    start = start_parameters(prepared, settings)
    cal = theta.for_float(f, sources)
    candidate = Parameters(cal, model or start.model)
    this = run_pass(prepared, candidate.inflated(factor), settings, keep_members=True)
    signal = this.params.signal
    pairs = m_step_pairs(
        prepared.toa, this.assoc.posterior, this.distances, np.arange(prepared.n_cycles),
        prepared.offset, this.assoc.predicted_toa, signal, this.assoc.members,
    )  # fmt: skip
    cycle, src = pairs["day"].astype(int), pairs["source"]
    day = prepared.day[cycle]
    shift = cal.predicted_shift(day, src)
    u = 1000.0 / cal.sound_speed
    residual = pairs["residual_toa"] - pairs["distance_km"] * u - shift
    stats = float_design(
        pairs["distance_km"], day, src, source_days(record)[cycle, src], residual,
        pairs["weight"], n_sources=prepared.n_sources, sigma=signal.sigma,
    )  # fmt: skip
    fitted = candidate.model
    statistical = config.calibrate_params & set(STATISTICAL_PARAMS)
    if fit and statistical:
        fitted = float_m_step(this, candidate, frozenset(statistical), start).model
    arrivals = np.bincount(src, weights=pairs["weight"].mean(axis=0), minlength=prepared.n_sources)
    lost = ended_lost(prepared, this.params, this.filt)
    return FloatPass(stats, this.loglik, candidate.model, fitted, start.model, arrivals, lost)


def _e_step_task(threads: int, *args: Any) -> FloatPass:
    """:func:`float_e_step` on a Dask worker, its kernels on ``threads`` numba threads."""
    prepare_environment()
    with numba_threads(threads):
        return float_e_step(*args)


@dataclass(frozen=True)
class ExperimentResult:
    """The experiment's calibration: ``parameters`` kept (shared and per-float clocks, with
    standard errors), ``sources``, per source the ``floats`` that heard it and the expected
    direct ``arrivals`` (all floats, the kept pass), ``loglik`` the penalised
    log-likelihood of each pass at the configured noise, ``best`` the kept one of those,
    ``stop`` why the EM ended, ``names`` the floats and ``floats`` each one's share
    (:class:`~rankmodels.tracking.shared.FloatCalibration`). ``parameters`` are the kept
    candidate's polished ``polish_reach`` of the way along its Newton step (:func:`_polish`;
    NaN: not polished), and their standard errors combine the statistical error and
    ``monte_carlo_std`` (over ``theta``,
    :meth:`~rankmodels.tracking.joint.JointParameters.vector`; NaN where not estimated), the
    EM end point's Monte Carlo error (:func:`~rankmodels.tracking.joint.
    monte_carlo_covariance`)."""

    parameters: JointParameters
    sources: ExperimentSources
    floats_per_source: np.ndarray
    arrivals: np.ndarray
    loglik: tuple[float, ...]
    best: int
    stop: str
    names: tuple[str, ...]
    floats: tuple[FloatCalibration, ...]
    monte_carlo_std: np.ndarray
    polish_reach: float

    @property
    def sound_speed_monte_carlo_std(self) -> float:
        """The Monte Carlo part of the sound speed's standard error (m/s; NaN when not
        estimated)."""
        return float(self.monte_carlo_std[0]) * self.parameters.sound_speed**2 / 1000.0


def experiment_passes(config: TrackConfig) -> int:
    """Most E-step passes of :func:`calibrate_experiment` (each one task per float): the
    annealing, the files' values and the annealed estimate, then per M-step its proposal and
    at most :func:`~rankmodels.tracking.em.extrapolations` more along its step, one
    likelihood-ratio check per geometry group asked for, and with any geometry the polish's
    three (:func:`_polish`)."""
    per_step = 1 + em.extrapolations()
    checks = len(set(em.TESTED_GROUPS) & config.calibrate_params)
    annealing = len(em.ANNEALING) + 2 * em.hotter_levels()  # as for one float
    polish = 3 * int(bool(config.calibrate_params & set(GEOMETRY_PARAMS)))
    return annealing + 2 + config.calibration_iterations * per_step + checks + polish


#: A candidate of the experiment's search: the shared and per-float geometry, and each
#: float's statistical model (None: the configured one).
Candidate = tuple[JointParameters, list]


@dataclass
class ExperimentProblem:
    """The experiment's calibration as an :class:`~rankmodels.tracking.em.Problem`: the
    evidence of a candidate is every float's :class:`FloatPass`; ``e_steps(theta, models,
    factor, fit)`` runs them, ``m_step(theta, passes)`` is the pooled Newton step of the
    geometry ``geometry`` (:func:`~rankmodels.tracking.joint.joint_m_step`); ``files`` the
    file values, ``nominal`` the files' sound speed."""

    e_steps: Callable[..., list[FloatPass]]
    m_step: Callable[[JointParameters, list[FloatPass]], JointParameters]
    geometry: frozenset[str]
    files: JointParameters
    nominal: float
    clocks: list[ClockReadings]

    def evaluate(self, candidate: Candidate, factor: float = 1.0) -> em.Scored:
        theta, models = candidate
        passes = self.e_steps(theta, models, factor, fit=factor == 1.0)  # annealing: no fit
        score = sum(p.loglik + p.model.log_prior(p.start) for p in passes)
        score += joint_log_prior(theta, self.nominal, self.clocks)
        loglik = sum(p.loglik for p in passes)
        return em.Scored(score, loglik, any(p.lost for p in passes), passes)

    def propose(
        self, candidate: Candidate, evidence: list[FloatPass], groups: frozenset[str]
    ) -> Candidate:
        theta, models = candidate
        new = self.m_step(theta, evidence) if groups & self.geometry else theta
        if groups & set(STATISTICAL_PARAMS):
            models = [p.fitted for p in evidence]
        return new, models

    def along(self, start: Candidate, proposal: Candidate, reach: float) -> Candidate:
        """``start + reach (proposal - start)`` over ``theta`` (the slowness, not the speed),
        with the proposal's standard errors and statistical models."""
        origin, _ = start[0].vector()
        target, std = proposal[0].vector()
        layout = start[0].layout
        return JointParameters.from_vector(layout, origin + reach * (target - origin), std), (
            proposal[1]
        )

    def without(self, candidate: Candidate, group: str) -> Candidate:
        return candidate[0].without(group, self.files), candidate[1]

    def estimates(self, candidate: Candidate, group: str) -> bool:
        return candidate[0].estimates(group)

    def largest_z(self, candidate: Candidate, group: str) -> float:
        return candidate[0].largest_z(group, self.files)

    def discard(self, scored: em.Scored) -> None:
        """Nothing to count: an E-step's progress is counted per float as it ends."""


#: Farthest the polish goes along its Newton step, in steps: the secant through the two
#: directional derivatives extrapolates their line no further.
POLISH_REACH = 2.0


def _polish(
    theta: JointParameters,
    kept: list[ResidualStatistics],
    passes_at: Callable[[JointParameters, int], list[ResidualStatistics]],
    seed: int,
    m_step: Callable[[ResidualStatistics, JointParameters], JointParameters],
    score: Callable[..., tuple[ResidualStatistics, np.ndarray, np.ndarray]],
    covariance: Callable[[ResidualStatistics, np.ndarray, JointParameters], np.ndarray],
) -> tuple[JointParameters, np.ndarray, float]:
    """The search's end point ``theta`` moved to where the penalised log-likelihood's
    derivative along the Newton step is zero, judged by derivatives instead of particle
    log-likelihoods (module docstring); returns it, its Monte Carlo covariance and ``t``.

    ``kept``: the floats' statistics of ``theta``'s pass (random numbers ``seed``);
    ``passes_at(theta, seed)`` runs every float's E-step. With a second pass at ``seed + 1``,
    ``score`` (:func:`~rankmodels.tracking.joint.replicated_score`) gives the averaged pooled
    statistics, the gradient ``g_0`` and one pass's score noise; ``m_step`` from the average
    gives the step ``s`` (:func:`~rankmodels.tracking.joint.joint_m_step`, whose standard
    errors the result takes). Two passes at ``theta + s`` give ``g_1``; the directional
    derivatives ``a = g_0 . s`` and ``b = g_1 . s`` put the maximum along the step at ``t =
    a / (a - b)`` (at most :data:`POLISH_REACH`; 1 when ``b >= a``, which only Monte Carlo
    noise makes). The end point is ``theta + t s``; its Monte Carlo covariance
    (``covariance``, :func:`~rankmodels.tracking.joint.monte_carlo_covariance`) takes half the
    noise (two passes averaged at each point). Without a step (the M-step cannot solve) the
    end point stays (``t`` NaN), with one pass's noise."""
    replicate = passes_at(theta, seed + 1)
    pooled, gradient, noise = score(kept, replicate, theta)
    try:
        target = m_step(pooled, theta)
    except ValueError:
        return theta, covariance(pooled, noise, theta), math.nan
    origin, std = theta.vector()
    goal, goal_std = target.vector()
    step = goal - origin
    probe = JointParameters.from_vector(theta.layout, goal, std)
    at_probe = passes_at(probe, seed), passes_at(probe, seed + 1)
    _, gradient_probe, noise_probe = score(*at_probe, probe)
    a, b = gradient @ step, gradient_probe @ step
    reach = min(a / (a - b), POLISH_REACH) if a > b else 1.0
    std = np.where(np.isfinite(goal_std), goal_std, std)
    end = JointParameters.from_vector(theta.layout, origin + max(reach, 0.0) * step, std)
    return end, covariance(pooled, 0.25 * (noise + noise_probe), end), max(reach, 0.0)


def _e_steps(
    files: Sequence[str],
    config: TrackConfig,
    theta: JointParameters,
    sources: ExperimentSources,
    models: Sequence[StatisticalModel | None],
    factor: float,
    fit: bool,
    client: Any,
    threads: int,
    progress: Progress,
    checkpoint: PassStore | None = None,
) -> list[FloatPass]:
    """Every float's E-step, serially or as one Dask task per float (input order); with a
    ``checkpoint``, the passes it holds are read back and every new one is kept in it as it
    ends."""
    n = len(files)
    args = [
        (files[f], config, theta, f, sources.of_float[f], models[f], factor, fit) for f in range(n)
    ]
    keys: list[str] = []
    results: list[FloatPass | None] = [None] * n
    if checkpoint is not None:
        keys = [checkpoint.key(checkpoint.record_sha256(a[0]), *a[1:]) for a in args]
        results = [checkpoint.load(key) for key in keys]

    def finished(f: int, result: FloatPass) -> None:
        results[f] = result
        if checkpoint is not None:
            checkpoint.save(keys[f], result)
        if progress:
            progress(1)

    todo = [f for f in range(n) if results[f] is None]
    if progress and n > len(todo):
        progress(n - len(todo))
    if client is None:
        for f in todo:
            finished(f, float_e_step(*args[f]))
        return results  # type: ignore[return-value]
    from distributed import as_completed

    futures = [client.submit(_e_step_task, threads, *args[f], pure=False) for f in todo]
    index = {future.key: f for f, future in zip(todo, futures, strict=True)}
    try:
        for future in as_completed(futures, loop=client.loop):
            finished(index[future.key], future.result())
    finally:
        client.cancel([f for f in futures if not f.done()])
    return results  # type: ignore[return-value]


def _mean_starting_speed(records: dict[str, xr.Dataset]) -> float:
    """The mean of the records' starting sound speeds (m/s;
    :func:`~rankmodels.tracking.sound_speed.starting_sound_speed`)."""
    return float(np.mean([starting_sound_speed(r).value for r in records.values()]))


def read_records(paths: Sequence[str], labels_required: bool = False) -> dict[str, xr.Dataset]:
    """The validated records of ``paths`` by float (:func:`~rankmodels.tracking.batch.
    float_folders`). Raises :class:`~rankmodels.errors.InputError` naming the path of an
    unreadable record (a file that cannot be read too)."""
    records = {}
    for name, path in zip(float_folders(paths), paths, strict=True):
        try:
            records[name] = read_record(path, labels_required=labels_required)[0]
        except InputError as err:
            raise err.with_path(path) from None
        except OSError as err:
            raise InputError(str(err.strerror or err), path=path) from None
    return records


def calibrate_experiment(
    files: Sequence[str | os.PathLike[str]],
    config: TrackConfig,
    *,
    client: Any | None = None,
    threads: int | None = None,
    progress: Progress = None,
    checkpoint: PassStore | None = None,
) -> ExperimentResult:
    """Calibrate the floats of ``files`` together (module docstring), serially or with one
    task per float and pass on the ``dask.distributed`` ``client`` (``threads`` numba threads
    per task, default :func:`~rankmodels.tracking.batch.worker_threads`); ``progress(1)``
    per float and pass (at most ``len(files) *`` :func:`experiment_passes`); ``checkpoint``:
    :mod:`~rankmodels.tracking.checkpoint`. Raises :class:`~rankmodels.errors.InputError`
    for an unreadable record (its path in the message; a file that cannot be read too) or
    sources placed differently by different floats."""
    paths = [os.fspath(f) for f in files]
    records = read_records(paths, labels_required=config.engine == "labels")
    names = tuple(records)
    sources = experiment_sources(records)
    layout = JointLayout(len(sources.names), len(paths))
    nominal = config.sound_speed or _mean_starting_speed(records)
    geometry = config.calibrate_params & set(GEOMETRY_PARAMS)
    if threads is None and client is not None:
        threads = worker_threads(client)
    n = len(paths)

    ran = [0]  # passes of E-steps so far (for the progress count)

    def e_steps(theta, models, factor=1.0, fit=True, seed=config.seed) -> list[FloatPass]:
        ran[0] += 1
        return _e_steps(
            paths, replace(config, seed=seed), theta, sources, models, factor, fit, client,
            threads or 1, progress, checkpoint,
        )  # fmt: skip

    def m_step(theta, passes):
        stats = pool([p.statistics for p in passes], sources.of_float, layout)
        return joint_m_step(stats, theta, layout, nominal, frozenset(geometry), clocks)

    clocks = [ClockReadings.from_record(records[name]) for name in names]
    nominal_theta = JointParameters.nominal(layout, nominal, clocks)
    problem = ExperimentProblem(
        e_steps, m_step, frozenset(geometry), nominal_theta, nominal, clocks
    )
    start = (nominal_theta, [None] * n)
    factors = em.ANNEALING if geometry else ()
    annealed, estimate = em.anneal(problem, start, frozenset(geometry), factors)
    candidates = [start, estimate] if annealed else [start]
    stage = (frozenset(config.calibrate_params),)  # pooled floats separate speed and offsets
    found = em.search(problem, candidates, stage, config.calibration_iterations, bool(geometry))
    best = em.likelihood_ratio_check(problem, found)
    candidates, stop = found.candidates, found.stop
    pass_log, scores = [s.evidence for s in found.scored], [s.score for s in found.scored]
    theta, models = candidates[best]
    monte_carlo, reach = np.zeros((layout.size, layout.size)), math.nan
    if np.isfinite(theta.vector()[1]).any():
        groups = frozenset(g for g in GEOMETRY_PARAMS if theta.estimates(g))

        def passes_at(theta, seed):
            return [p.statistics for p in e_steps(theta, models, fit=False, seed=seed)]

        theta, monte_carlo, reach = _polish(
            theta, [p.statistics for p in pass_log[best]], passes_at, config.seed,
            lambda pooled, theta: joint_m_step(pooled, theta, layout, nominal, groups, clocks),
            lambda a, b, theta: replicated_score(a, b, sources.of_float, theta, nominal, clocks),
            lambda pooled, noise, theta: monte_carlo_covariance(
                pooled, noise, theta, nominal, clocks
            ),
        )  # fmt: skip
    total, monte_carlo_std = _with_monte_carlo(theta, monte_carlo)
    candidates[best] = (total, models)
    if progress:
        progress(max(experiment_passes(config) - ran[0], 0) * n)
    return _result(
        candidates, pass_log, scores, best, stop, names, sources, layout, config,
        monte_carlo_std, reach,
    )  # fmt: skip


def _with_monte_carlo(
    theta: JointParameters, monte_carlo: np.ndarray
) -> tuple[JointParameters, np.ndarray]:
    """``theta`` with standard errors combining its statistical ones and the Monte Carlo
    covariance's diagonal (``hypot``), and that Monte Carlo part (NaN where not estimated)."""
    values, std = theta.vector()
    monte_carlo_std = np.where(np.isfinite(std), np.sqrt(np.diag(monte_carlo)), math.nan)
    total = JointParameters.from_vector(theta.layout, values, np.hypot(std, monte_carlo_std))
    return total, monte_carlo_std


def _result(
    candidates: list[tuple[JointParameters, list]],
    pass_log: list[list[FloatPass]],
    scores: list[float],
    best: int,
    stop: str,
    names: tuple[str, ...],
    sources: ExperimentSources,
    layout: JointLayout,
    config: TrackConfig,
    monte_carlo_std: np.ndarray,
    polish_reach: float,
) -> ExperimentResult:
    """The :class:`ExperimentResult` of the passes at the configured noise."""
    theta = candidates[best][0]
    floats = []
    arrivals = np.zeros(layout.n_sources)
    heard = np.zeros(layout.n_sources, dtype=int)
    for f, src in enumerate(sources.of_float):
        passes = [log[f] for log in pass_log]
        result = CalibrationResult(
            params=config.calibrate_params,
            trace=tuple(c[0].for_float(f, src) for c in candidates[: len(scores)]),
            loglik=tuple(p.loglik for p in passes),
            sigma=tuple(p.model.signal.sigma for p in passes),
            start=0,
            best=best,
            stop=stop,
            particles=pass_settings(config).particles,
            models=tuple(p.model for p in passes),
        )
        floats.append(
            FloatCalibration(
                result, theta.drift_correction[src], theta.drift_correction_std[src], len(names)
            )
        )
        evidence = pass_log[best][f].arrivals
        np.add.at(arrivals, src, evidence)
        np.add.at(heard, src, (evidence >= MIN_EVIDENCE).astype(int))
    return ExperimentResult(
        parameters=theta,
        sources=sources,
        floats_per_source=heard,
        arrivals=arrivals,
        loglik=tuple(scores),
        best=best,
        stop=stop,
        names=names,
        floats=tuple(floats),
        monte_carlo_std=monte_carlo_std,
        polish_reach=polish_reach,
    )


#: Columns of the experiment's source table (:func:`source_table`, ``sources.csv``).
SOURCE_COLUMNS: dict[str, str] = {
    "source": "source name",
    "lat": "degrees_north",
    "lon": "degrees_east",
    "offset_correction": "shared correction of the written source_offset (s)",
    "offset_correction_std": "its standard error (s; statistical and the EM's Monte Carlo "
    "error; NaN where not estimated)",
    "drift_correction": "shared correction of the source clock drift (s/day)",
    "drift_correction_std": "its standard error (s/day; as the offset's)",
    "floats": f"floats that heard the source (at least {MIN_EVIDENCE:g} expected direct arrival)",
    "arrivals": "expected direct arrivals from the source over all floats",
}


def source_table(result: ExperimentResult) -> pd.DataFrame:
    """One row per source of the experiment (:data:`SOURCE_COLUMNS`)."""
    p, src = result.parameters, result.sources
    return pd.DataFrame(
        {
            "source": list(src.names),
            "lat": src.lat,
            "lon": src.lon,
            "offset_correction": p.offset_correction,
            "offset_correction_std": p.offset_correction_std,
            "drift_correction": p.drift_correction,
            "drift_correction_std": p.drift_correction_std,
            "floats": result.floats_per_source,
            "arrivals": np.round(result.arrivals, 1),
        },
        columns=list(SOURCE_COLUMNS),
    )


def shared_summary(result: ExperimentResult) -> dict[str, object]:
    """The shared estimates for ``summary.json``: ``sound_speed``, its standard error
    ``_std`` and that error's Monte Carlo part ``_monte_carlo_std`` (m/s; null where not
    estimated), ``floats``, ``em_passes``, ``kept_pass``, ``polish_reach`` (null: not
    polished), ``stop`` and ``sources`` (:func:`source_table` rows)."""
    p = result.parameters
    sources = json.loads(source_table(result).to_json(orient="records"))
    monte_carlo = result.sound_speed_monte_carlo_std
    return {
        "sound_speed": p.sound_speed,
        "sound_speed_std": p.sound_speed_std if np.isfinite(p.sound_speed_std) else None,
        "sound_speed_monte_carlo_std": monte_carlo if np.isfinite(monte_carlo) else None,
        "floats": len(result.names),
        "em_passes": len(result.loglik),
        "kept_pass": result.best,
        "polish_reach": result.polish_reach if np.isfinite(result.polish_reach) else None,
        "stop": result.stop,
        "sources": sources,
    }


SOURCES_FILE = "sources.csv"


def write_sources(result: ExperimentResult, out: str | os.PathLike[str]) -> list[str]:
    """Write :func:`source_table` as ``out/sources.csv`` (atomically); returns the name."""
    with atomic_output(Path(out) / SOURCES_FILE, "w") as handle:
        source_table(result).to_csv(handle, index=False, lineterminator="\n", float_format="%.5g")
    return [SOURCES_FILE]
