"""One pass over a prepared record: filter, smoother, association ([Pareek2017] Algorithm 2
plus smoothing), as a function of the record and the parameters.

:func:`run_pass` runs the forward particle filter over the filter's steps now and the rest
when first read (:class:`Pass`), under the same parameters and with the filter's generator
where the filter left it, so a lazy pass equals an eager one; an EM pass that is not kept only
filters (its log-likelihood is all the EM reads).

1. :func:`run_filter`: the likelihood of cycle ``t`` at particle ``X`` comes from the engine
   (:func:`rankmodels.tracking.engines.log_likelihood`) with the predicted TOAs of the sources
   active at that time (:mod:`~rankmodels.tracking.prepared`); cycles without arrivals only
   predict; each position fix is a step of its own whose likelihood is ``N(fix; X, s^2 I_2)``
   in km (:mod:`~rankmodels.tracking.fixes`), the recovery fix (when smoothing) the last;
2. :func:`smooth`: smoothed trajectories drawn backwards
   (:func:`~rankmodels.tracking.smoother.backward_simulate`), or the filter's resampled
   particles without smoothing: an equally weighted ensemble of ``M`` positions per cycle;
3. :func:`associate`: each arrival's association posterior ``P(R_j = i | data)`` is the
   ensemble average of the engine's per-position posteriors; the predicted TOAs of every
   source at the posterior mean.

Every pass over the same record is seeded ``config.seed``: passes draw the same random numbers
(common random numbers for the EM's passes) and differ only by their parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from rankmodels.tracking.config import TrackConfig
from rankmodels.tracking.engines import LikelihoodResult, log_likelihood
from rankmodels.tracking.filter import FilterResult, particle_filter
from rankmodels.tracking.fixes import fix_loglik
from rankmodels.tracking.geometry import tangent_offsets
from rankmodels.tracking.prepared import Parameters, Prepared
from rankmodels.tracking.smoother import backward_simulate

__all__ = ["Association", "Pass", "Predictor", "run_pass"]

Progress = Callable[[int], None] | None


class Predictor:
    """Predicted TOAs and engine calls for ``prepared`` under ``params``; ``unconverged
    (T,)`` marks the cycles where a message-passing engine (bp, minfactor) left a particle
    unconverged in the filter (its likelihood there is the last sweep's, an approximation).

    With a correlation model (``params.model.correlation``) and heights in the record, each
    arrival's clutter weight is multiplied by ``f_C(c) / f_S(c)`` and each cycle's
    log-likelihood gains ``sum_j log f_S(c_j)`` (:mod:`~rankmodels.tracking.correlation`):
    ``clutter_weight (T, r)`` and ``height_loglik (T,)``, None without."""

    def __init__(self, prepared: Prepared, params: Parameters) -> None:
        self.prepared = prepared
        self.params = params
        cal = params.calibration
        self.km_per_s = cal.sound_speed / 1000.0
        n = prepared.n_sources
        self.shift = cal.predicted_shift(prepared.day[:, None], np.arange(n)[None, :])  # (T, s)
        self.unconverged = np.zeros(prepared.n_cycles, dtype=bool)
        self.clutter_weight = self.height_loglik = None
        heights, correlation = prepared.correlation, params.model.correlation
        if correlation is not None and heights is not None:
            heights = np.where(np.isnan(prepared.toa), np.nan, heights)
            self.clutter_weight = correlation.clutter_weight(heights)
            self.height_loglik = correlation.log_source_density(heights).sum(axis=1)

    def predicted(self, t: int, x: np.ndarray) -> np.ndarray:
        """``(N, s_active)`` predicted TOAs (s) of the sources active at cycle ``t``."""
        act = self.prepared.active[t]
        distance = self.prepared.distance(t, x)
        return distance / self.km_per_s + self.prepared.offset[t, act] + self.shift[t, act]

    def evaluate(
        self, t: int, x: np.ndarray, *, association: bool, engine: str | None = None
    ) -> LikelihoodResult:
        """The engine's result for cycle ``t`` at positions ``x`` (N, 2)."""
        prepared = self.prepared
        labels, weight, truncation = prepared.labels, self.clutter_weight, prepared.truncation
        res = log_likelihood(
            prepared.toa[t],
            self.predicted(t, x),
            self.params.signal,
            engine=engine or prepared.engine,
            labels=None if labels is None else labels[t],
            association=association,
            clutter_weight=None if weight is None else weight[t],
            truncation=None if truncation is None else truncation[t],
        )
        if self.height_loglik is not None:
            res.loglik = res.loglik + self.height_loglik[t]
        return res

    def cycle_loglik(self, t: int, x: np.ndarray) -> np.ndarray | None:
        """``(N,)`` log-likelihood of cycle ``t`` at particles ``x``; None without data."""
        if not self.prepared.has_data[t]:
            return None
        return self.evaluate(t, x, association=False).loglik

    def step_loglik(self, k: int, x: np.ndarray) -> np.ndarray | None:
        """Filter step ``k``'s log-likelihood: its cycle's arrivals (noting an unconverged
        engine), or its fix's ``N(fix; X, s^2 I_2)`` (km;
        :func:`~rankmodels.tracking.fixes.fix_loglik`)."""
        prepared = self.prepared
        cycle = prepared.steps.cycle[k]
        if cycle < 0:
            lat, lon, error = prepared.fix_points[prepared.steps.fix[k]]
            return fix_loglik(lat, lon, error, x)
        if not prepared.has_data[cycle]:
            return None
        res = self.evaluate(cycle, x, association=False)
        self.unconverged[cycle] = res.converged is False
        return res.loglik

    def association(self, t: int, ensemble: np.ndarray) -> np.ndarray:
        """``(M, r, s + 1)`` posterior over (all sources, clutter) of each arrival given each
        of the ``M`` positions of ``ensemble``; NaN rows where nothing was recorded. Engines
        that give no association fall back to ``exact``."""
        prepared = self.prepared
        n_src = prepared.n_sources
        out = np.full((ensemble.shape[0], prepared.toa.shape[1], n_src + 1), np.nan)
        if not prepared.has_data[t]:
            return out
        post = self.evaluate(t, ensemble, association=True).association
        if post is None:
            post = self.evaluate(t, ensemble, association=True, engine="exact").association
        m = post.shape[1]  # post: (M, m, s_active + 1)
        out[:, :m] = 0.0
        out[:, :m, np.flatnonzero(prepared.active[t])] = post[:, :, :-1]
        out[:, :m, n_src] = post[:, :, -1]
        return out


def run_filter(
    predictor: Predictor, config: TrackConfig, rng: np.random.Generator, progress: Progress = None
) -> FilterResult:
    """The forward particle filter over the steps: the cycles and fixes (and the recovery
    step)."""
    prepared = predictor.prepared
    return particle_filter(
        prepared.x0,
        prepared.dt,
        predictor.step_loglik,
        predictor.params.dynamics,
        config.particles,
        rng,
        ess_threshold=config.ess_threshold,
        n_ensemble=0 if config.smooth else config.ensemble,
        keep_history=config.smooth,
        progress=progress,
    )


def smooth(
    predictor: Predictor, filt: FilterResult, config: TrackConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``ensembles (T, M, d)`` (the states: positions, then velocities when the dynamics has
    them), ``mean (T, 2)`` and ``cov (T, 2, 2)`` km^2 of the smoothed trajectories' positions
    at the cycles (the filter's, without smoothing); the trajectories pass through every
    filter step, so every fix shapes them. Frees the filter's history."""
    prepared = predictor.prepared
    at = prepared.cycle_steps
    if not config.smooth:
        return filt.ensembles[at], filt.mean[at], filt.cov[at]
    dynamics = predictor.params.dynamics
    traj = backward_simulate(
        filt.history_x,
        filt.history_logw,
        filt.history_parent,
        prepared.dt,
        dynamics,
        config.ensemble,
        rng,
    )[at]
    filt.history_x = filt.history_logw = filt.history_parent = None
    moments = [dynamics.moments(traj[t]) for t in range(prepared.n_cycles)]
    return traj, np.array([m for m, _ in moments]), np.array([c for _, c in moments])


@dataclass
class Association:
    """The association stage's output: ``posterior (T, r, s + 1)`` the association posterior
    of each arrival, ``predicted_toa (T, s)`` at the posterior mean (NaN for inactive
    sources) and, when kept, ``members (T, M, r, s + 1)``: the association given each of the
    ``M`` smoothed trajectories (float32), whose mean over ``M`` is ``posterior``."""

    posterior: np.ndarray
    predicted_toa: np.ndarray
    members: np.ndarray | None = None


def associate(
    predictor: Predictor,
    ensembles: np.ndarray,
    mean: np.ndarray,
    keep_members: bool,
    progress: Progress = None,
) -> Association:
    """Association posteriors and predicted TOAs, cycle by cycle."""
    prepared = predictor.prepared
    n_src = prepared.n_sources
    shape = (prepared.n_cycles, prepared.toa.shape[1], n_src + 1)
    posterior = np.empty(shape)
    members = (
        np.empty((shape[0], ensembles.shape[1], *shape[1:]), np.float32) if keep_members else None
    )
    predicted = np.full((prepared.n_cycles, n_src), np.nan)
    for t in range(prepared.n_cycles):
        given = predictor.association(t, ensembles[t])  # (M, r, s + 1)
        posterior[t] = given.mean(axis=0)
        if members is not None:
            members[t] = given
        predicted[t, prepared.active[t]] = predictor.predicted(t, mean[t][None, :])[0]
        if progress:
            progress(1)
    return Association(posterior, predicted, members)


class _Stages(NamedTuple):
    """What a pass computes after its filter (:meth:`Pass._complete`)."""

    ensembles: np.ndarray
    velocities: np.ndarray | None
    mean: np.ndarray
    cov: np.ndarray
    assoc: Association


class Pass:
    """The filter of one pass, and its smoothed ``ensembles``, ``mean``, ``cov`` and
    ``assoc`` computed when first read (module docstring); ``params`` the parameters it ran
    under."""

    def __init__(
        self,
        predictor: Predictor,
        config: TrackConfig,
        keep_members: bool,
        rng: np.random.Generator,
        progress: Progress,
    ) -> None:
        self.prepared = predictor.prepared
        self.params = predictor.params
        self.unconverged = predictor.unconverged
        self.filt = run_filter(predictor, config, rng, progress)
        self._pending: tuple | None = (predictor, config, keep_members, rng, progress)
        self._stages: _Stages | None = None
        self._distances: np.ndarray | None = None

    def _complete(self) -> _Stages:
        if self._stages is None:
            predictor, config, keep_members, rng, progress = self._pending  # type: ignore[misc]
            states, mean, cov = smooth(predictor, self.filt, config, rng)
            ensembles = np.ascontiguousarray(states[..., :2])
            velocities = np.ascontiguousarray(states[..., 2:]) if states.shape[2] > 2 else None
            assoc = associate(predictor, ensembles, mean, keep_members, progress)
            self._stages = _Stages(ensembles, velocities, mean, cov, assoc)
            self._pending = None
        return self._stages

    @property
    def ensembles(self) -> np.ndarray:
        """``(T, M, 2)`` the smoothed trajectories' positions (lat, lon) at the cycles."""
        return self._complete().ensembles

    @property
    def velocities(self) -> np.ndarray | None:
        """``(T, M, 2)`` their velocities (east, north km/day) at the cycles; None when the
        dynamics has no velocity."""
        return self._complete().velocities

    @property
    def mean(self) -> np.ndarray:
        return self._complete().mean

    @property
    def cov(self) -> np.ndarray:
        return self._complete().cov

    @property
    def assoc(self) -> Association:
        return self._complete().assoc

    @property
    def distances(self) -> np.ndarray:
        """``(M, T, s)`` distances (km) from the ensemble's trajectories to the active
        sources, NaN where inactive (the E-step's), computed once however many M-steps read
        them."""
        if self._distances is None:
            prepared, ensembles = self.prepared, self.ensembles
            out = np.full((ensembles.shape[1], *prepared.active.shape), np.nan)
            for t in range(prepared.n_cycles):
                out[:, t, prepared.active[t]] = prepared.distance(t, ensembles[t])
            self._distances = out
        return self._distances

    def trajectory_steps(self) -> np.ndarray:
        """``(M, T, 2)`` (east, north) km steps of each smoothed trajectory, from the launch
        position to the first cycle and between consecutive cycles."""
        ensembles, x0 = self.ensembles, self.prepared.x0
        n_traj = ensembles.shape[1]
        lat = np.vstack([np.full((1, n_traj), x0[0]), ensembles[:, :, 0]])  # (T + 1, M)
        lon = np.vstack([np.full((1, n_traj), x0[1]), ensembles[:, :, 1]])
        east, north = tangent_offsets(lat[:-1], lon[:-1], lat[1:], lon[1:])
        return np.stack([east.T, north.T], axis=2)

    def settle_progress(self) -> None:
        """Count the association's progress steps now (and not when it runs, if ever)."""
        if self._pending is not None and self._pending[4]:
            progress = self._pending[4]
            progress(self.prepared.n_cycles)
            self._pending = (*self._pending[:4], None)

    @property
    def loglik(self) -> float:
        """The particle estimate of ``log p(data)``: every filter step, fixes and recovery
        included."""
        return float(np.sum(self.filt.loglik))


def run_pass(
    prepared: Prepared,
    params: Parameters,
    config: TrackConfig,
    *,
    keep_members: bool = False,
    progress: Progress = None,
) -> Pass:
    """A pass over ``prepared`` under ``params`` with ``config``'s particles, ensemble,
    smoothing and a generator seeded ``config.seed``; ``keep_members``: the association keeps
    the association given each trajectory (:attr:`Association.members`, which an EM's M-steps
    weigh by). The filter runs now, the rest when first read."""
    rng = np.random.default_rng(config.seed)
    return Pass(Predictor(prepared, params), config, keep_members, rng, progress)
