"""M-step of the Lagrangian motion: mean velocity, eddy speed and Lagrangian time scale from the
smoothed trajectories, and the Lagrangian statistics they give.

The complete-data log-likelihood of trajectory ``m`` (positions and velocities at the cycles)
is the sum over its steps ``k`` (cycle ``k - 1`` to ``k``, ``dt_k`` days) of the transition
density of :class:`~rankmodels.tracking.dynamics.LagrangianMotion` (both axes),

    l_m(theta) = sum_k log N((Delta_mk, u_mk); mean(u_m,k-1; theta), Sigma(dt_k; theta)),

in ``theta = (mu_east, mu_north, s, tau)`` on the scales ``phi = (mu_east, mu_north, log s,
log tau)``. The step is one penalised Newton step of the whole vector on the *marginal*
likelihood (Louis 1982): ``phi + (I + W)^-1 (g - W (phi - phi_0))`` with ``g`` the mean score
over the trajectories (by Fisher's identity the score of the marginal likelihood), ``I``
Louis' observed information -- the complete-data information ``I_c`` (the mean over
trajectories of the sum over steps of the outer products of the step scores) less the
covariance of the per-trajectory scores (what the unknown velocities take away), its
eigenvalues relative to ``I_c`` floored at :data:`MIN_MOTION_SHARE` -- and ``W`` the priors'
precisions (:data:`~rankmodels.tracking.model_fit.PRIORS`) centred on the starting values
``phi_0``; each component moves at most :data:`~rankmodels.tracking.model_fit.MAX_STEP`.
EM's own step, with ``I_c`` in place of ``I``, moves a time scale whose information is
mostly missing a tenth of the way per pass, so the estimate would stay near its start. Scores
are central differences of ``l`` in ``phi``; standard errors from ``(I + W)^-1``.
A parameter whose information is below its prior's (``I_jj w_j^2 <``
:data:`~rankmodels.tracking.model_fit.MIN_DATA_TO_PRIOR`; e.g. the time scale of a record of
a few days) keeps its starting value, and the others are solved without it.

The Lagrangian statistics (per axis, isotropic eddies): eddy kinetic energy ``EKE = s^2``
(``(u'^2 + v'^2) / 2``), single-particle diffusivity ``K = s^2 tau``; their standard errors
by the delta method from the joint covariance of ``(log s, log tau)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from rankmodels.text import with_error
from rankmodels.tracking.dynamics import M_PER_S, LagrangianMotion
from rankmodels.tracking.model_fit import (
    MAX_STEP,
    MIN_DATA_TO_PRIOR,
    PRIORS,
    Estimate,
    StatisticalModel,
)

__all__ = [
    "MOTION_NAMES",
    "LagrangianStatistics",
    "MotionFit",
    "fit_model_motion",
    "fit_motion",
    "lagrangian_statistics",
]

#: The Lagrangian motion's estimated parameters, in the order of ``phi``.
MOTION_NAMES = ("mean_velocity_east", "mean_velocity_north", "eddy_speed", "time_scale")
#: Smallest share of the complete-data information Louis' observed information of the motion
#: keeps (the statistical parameters keep
#: :data:`~rankmodels.tracking.model_fit.MIN_OBSERVED_SHARE`). The velocities are never
#: observed: on the shipped sample the smoothed trajectories' scores vary so much that 73-96 %
#: of the time scale's complete-data information is missing, so its EM step would cover a
#: tenth of the way to the maximum per pass and its standard error from the complete data
#: would be three times too small.
MIN_MOTION_SHARE = 0.05
#: Relative step of the central differences in ``phi``.
_H = 1e-4
#: Accepted range of each value after a step.
_BOUNDS = {
    "mean_velocity_east": (-200.0, 200.0),
    "mean_velocity_north": (-200.0, 200.0),
    "eddy_speed": (0.01, 200.0),
    "time_scale": (0.05, 365.0),
}


def _values(motion: LagrangianMotion) -> np.ndarray:
    return np.array([*motion.mean_velocity, motion.eddy_speed, motion.time_scale])


def _motion(template: LagrangianMotion, values: np.ndarray) -> LagrangianMotion:
    return replace(
        template,
        mean_velocity=(float(values[0]), float(values[1])),
        eddy_speed=float(values[2]),
        time_scale=float(values[3]),
    )


def _to_phi(values: np.ndarray) -> np.ndarray:
    return np.array([PRIORS[n].to_phi(float(v)) for n, v in zip(MOTION_NAMES, values, strict=True)])


def _from_phi(phi: np.ndarray) -> np.ndarray:
    return np.array([PRIORS[n].from_phi(float(p)) for n, p in zip(MOTION_NAMES, phi, strict=True)])


def step_scores(
    motion: LagrangianMotion,
    steps: np.ndarray,
    velocities: np.ndarray,
    dt: np.ndarray,
) -> np.ndarray:
    """``(M, K, 4)`` scores in ``phi`` of each step of each trajectory: ``steps (M, K + 1, 2)``
    (east, north) km from the launch to the first cycle and between cycles, ``velocities (M,
    K + 1, 2)`` km/day at the cycles, ``dt (K + 1,)`` days (the first step, from the launch,
    whose velocity is not kept, is left out)."""
    phi = _to_phi(_values(motion))
    args = (steps[:, 1:], velocities[:, :-1], velocities[:, 1:], np.asarray(dt, float)[1:])
    out = np.empty((*args[0].shape[:2], phi.size))
    for j in range(phi.size):
        h = _H * max(1.0, abs(phi[j]))
        up, down = phi.copy(), phi.copy()
        up[j] += h
        down[j] -= h
        l_up = _motion(motion, _from_phi(up)).step_loglik(*args)
        l_down = _motion(motion, _from_phi(down)).step_loglik(*args)
        out[..., j] = (l_up - l_down) / (2.0 * h)
    return out


def _observed(complete: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """Louis' observed information ``complete - missing`` with its eigenvalues relative to
    ``complete`` floored at :data:`MIN_MOTION_SHARE`."""
    vals, vecs = np.linalg.eigh(complete)
    root = vecs * np.sqrt(np.maximum(vals, 1e-300))  # complete = root root^T
    inv_root = np.linalg.pinv(root)
    rel = inv_root @ (complete - missing) @ inv_root.T
    rv, rvec = np.linalg.eigh(0.5 * (rel + rel.T))
    rel = (rvec * np.maximum(rv, MIN_MOTION_SHARE)) @ rvec.T
    return root @ rel @ root.T


@dataclass(frozen=True)
class MotionFit:
    """The motion after an M-step and the covariance ``(4, 4)`` of ``phi`` (NaN rows and
    columns for parameters kept at their start)."""

    motion: LagrangianMotion
    estimates: tuple[tuple[str, Estimate], ...]
    phi_cov: np.ndarray


def fit_motion(
    motion: LagrangianMotion,
    start: LagrangianMotion,
    steps: np.ndarray,
    velocities: np.ndarray,
    dt: np.ndarray,
) -> MotionFit:
    """One M-step of the Lagrangian motion from ``motion`` with priors centred on ``start``
    (module docstring); ``steps``, ``velocities``, ``dt`` as :func:`step_scores`."""
    scores = step_scores(motion, steps, velocities, dt)  # (M, K, 4)
    n_traj = scores.shape[0]
    complete = np.einsum("mki,mkj->ij", scores, scores) / n_traj
    per_traj = scores.sum(axis=1)  # (M, 4)
    missing = np.cov(per_traj, rowvar=False) if n_traj > 1 else np.zeros_like(complete)
    info = _observed(complete, missing)
    width = np.array([PRIORS[n].width for n in MOTION_NAMES])
    ratio = np.diag(info) * width**2
    determined = np.isfinite(ratio) & (ratio >= MIN_DATA_TO_PRIOR)
    phi, phi0 = _to_phi(_values(motion)), _to_phi(_values(start))
    precision = np.diag(1.0 / width**2)
    new_phi = phi0.copy()
    cov = np.full((phi.size, phi.size), np.nan)
    d = np.flatnonzero(determined)
    if d.size:
        sub = np.ix_(d, d)
        grad = per_traj.mean(axis=0)[d] - precision[sub] @ (phi - phi0)[d]
        step = np.linalg.solve(info[sub] + precision[sub], grad)
        new_phi[d] = phi[d] + np.clip(step, -MAX_STEP, MAX_STEP)
        cov[sub] = np.linalg.inv(info[sub] + precision[sub])
    values = _from_phi(new_phi)
    estimates = []
    for j, name in enumerate(MOTION_NAMES):
        lo, hi = _BOUNDS[name]
        start_value = float(_values(start)[j])
        if determined[j]:
            value = min(max(float(values[j]), lo), hi)
            values[j] = value
            std = PRIORS[name].derivative(value) * math.sqrt(cov[j, j])
            estimates.append((name, Estimate(value, std, start_value, True, float(ratio[j]))))
        else:
            values[j] = start_value
            info_ratio = float(ratio[j]) if math.isfinite(ratio[j]) else 0.0
            estimates.append((name, Estimate(start_value, math.nan, start_value, False,
                                             info_ratio)))  # fmt: skip
    return MotionFit(_motion(motion, values), tuple(estimates), cov)


def fit_model_motion(
    model: StatisticalModel,
    start: StatisticalModel,
    steps: np.ndarray,
    velocities: np.ndarray,
    dt: np.ndarray,
) -> StatisticalModel:
    """``model`` with its Lagrangian motion after one :func:`fit_motion` step (priors centred
    on ``start``'s), the motion's estimates added to its own and the covariance of ``phi``
    kept (``motion_cov``) for :func:`lagrangian_statistics`."""
    if model.motion is None or start.motion is None:
        raise ValueError("fit_model_motion needs models with a Lagrangian motion")
    fit = fit_motion(model.motion, start.motion, steps, velocities, dt)
    return replace(
        model,
        motion=fit.motion,
        motion_cov=tuple(map(tuple, fit.phi_cov.tolist())),
        estimates=model.estimates + fit.estimates,
    )


@dataclass(frozen=True)
class LagrangianStatistics:
    """A float's Lagrangian statistics with standard errors (NaN: not estimated): the mean
    velocity (east, north km/day), the eddy kinetic energy ``EKE = s^2`` (km^2/day^2), the
    time scale ``tau`` (days) and the diffusivity ``K = s^2 tau`` (km^2/day)."""

    mean_velocity: tuple[float, float]
    mean_velocity_std: tuple[float, float]
    eke: float
    eke_std: float
    time_scale: float
    time_scale_std: float
    diffusivity: float
    diffusivity_std: float

    def text(self) -> str:
        """One line in the units oceanographers quote: ``"mean velocity +2.01 ± 0.43 east,
        -0.67 ± 0.43 north cm/s; eddy kinetic energy 21.2 ± 1.5 cm2/s2; time scale 3.2 ±
        0.3 days; diffusivity 580 ± 80 m2/s"``; a quantity not estimated (the motion's start,
        or a value derived from one) says so in place of its error, and with none estimated
        the line starts ``"not estimated (the starting values): "`` with the bare values."""
        cm_s = 100.0 * M_PER_S  # cm/s per km/day
        (east, north), (east_std, north_std) = self.mean_velocity, self.mean_velocity_std
        stds = (east_std, north_std, self.eke_std, self.time_scale_std, self.diffusivity_std)
        none = not any(math.isfinite(std) for std in stds)

        def quantity(value: float, std: float, digits: int, signed: bool = False) -> str:
            missing = None if none else "not estimated"
            return with_error(value, std, digits, signed=signed, missing=missing)

        line = (
            f"mean velocity {quantity(east * cm_s, east_std * cm_s, 2, True)} east, "
            f"{quantity(north * cm_s, north_std * cm_s, 2, True)} north cm/s; "
            f"eddy kinetic energy {quantity(self.eke * cm_s**2, self.eke_std * cm_s**2, 1)}"
            f" cm2/s2; time scale {quantity(self.time_scale, self.time_scale_std, 1)} days; "
            f"diffusivity {quantity(self.diffusivity * K_M2_S, self.diffusivity_std * K_M2_S, 0)}"
            " m2/s"
        )
        return f"not estimated (the starting values): {line}" if none else line


#: m^2/s per km^2/day.
K_M2_S = 1e6 / 86_400.0


def lagrangian_statistics(model: StatisticalModel) -> LagrangianStatistics | None:
    """The statistics of ``model``'s Lagrangian motion (None without one; module docstring),
    errors by the delta method from ``model.motion_cov`` (NaN where not estimated):
    ``sd(log EKE) = 2 sd(log s)``, ``Var(log K) = 4 Var(log s) + 4 Cov + Var(log tau)``."""
    m = model.motion
    if m is None:
        return None
    c = np.full((4, 4), np.nan) if model.motion_cov is None else np.array(model.motion_cov)
    est = {name: model.estimate(name) for name in MOTION_NAMES}
    std = {name: math.nan if e is None else e.std for name, e in est.items()}
    eke = m.eddy_speed**2
    k = m.diffusivity
    var_log_k = 4.0 * c[2, 2] + 4.0 * c[2, 3] + c[3, 3]
    return LagrangianStatistics(
        mean_velocity=m.mean_velocity,
        mean_velocity_std=(std["mean_velocity_east"], std["mean_velocity_north"]),
        eke=eke,
        eke_std=eke * 2.0 * math.sqrt(c[2, 2]),
        time_scale=m.time_scale,
        time_scale_std=std["time_scale"],
        diffusivity=k,
        diffusivity_std=k * math.sqrt(var_log_k),
    )
