"""Which positional rule recovers the majority preference of a Mallows mixture: [Pareek2017]
section 4.6, Figure 4.1.

Setup (section 4.6.1). Five candidates A-E; a two-component Mallows mixture
``w Mallows(Z1, phi) + (1 - w) Mallows(Z2, phi)`` with ``phi = 0.8`` (``P ~ phi^d_KT``);
experiment 1: ``Z1 = D,E,A,B,C``, ``Z2 = B,C,D,E,A``; experiment 2: ``Z1 = A,B,C,D,E``, same
``Z2``; the weight ``w`` of ``Z1`` (which ranks A above B) runs from 0.51 to 1. Rules: Borda,
plurality, antiplurality (veto), log (``h(i) = -log i``, convex: its smallest score gap
``omega_h`` is at the bottom) and squared (``h(i) = -i^2``, concave: ``omega_h`` at the top).
A rule *succeeds* when it ranks A above B.

(a) Exactly, in the limit of infinitely many votes: the mixture's exact marginals
(:meth:`MallowsMixture.marginals`) go through :func:`rankmodels.aggregation.aggregate`. Every
marginal is linear in ``w``, so the score gap ``f(A) - f(B) = w g_1 + (1 - w) g_2`` changes sign
once, at ``w* = g_2 / (g_2 - g_1)`` (``g_c`` the gap under component ``c``): the rule succeeds
for ``w > w*``. Likewise ``gamma(w) = P(A above B)`` passes 1/2 at ``w_majority``.

(b) By simulation (:func:`aggregation_task`): the probability that the rule ranks A above B on
a profile of ``N`` sampled votes (Figure 4.1), with standard errors over replicates. A score tie
counts 1/2 (a fair coin breaks it).

(c) The axiom margins. Write ``gamma = P_{A<B}``. Splitting the gap by which of A, B is higher,

    f(A) - f(B) = gamma omega_eff - (1 - gamma) Omega_eff,
    omega_eff = E[h(sigma(A)) - h(sigma(B)) | A above B],
    Omega_eff = E[h(sigma(B)) - h(sigma(A)) | B above A],

and ``omega_h <= omega_eff``, ``Omega_eff <= Omega_h`` give eq. (4.6) -- the bounds are met
when A-over-B votes put the pair where ``h`` is flattest and B-over-A votes where it is
steepest. So the rule succeeds iff ``gamma > Omega_eff / (Omega_eff + omega_eff)``, and is
*guaranteed* to (for every distribution with this ``gamma``) iff ``gamma - 1/2`` exceeds its
epsilon-strong-Condorcet threshold ``1/2 (Omega - omega) / (Omega + omega)``
(:func:`rankmodels.aggregation.axioms.positional_axioms`). ``omega_eff`` and ``Omega_eff`` come
from the exact joint positions of A and B (:meth:`MallowsMixture.pair_positions`). Gaps and
margins are reported divided by ``Omega_h`` so the rules are comparable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from rankmodels.aggregation import aggregate, score_vector
from rankmodels.aggregation.axioms import positional_axioms
from rankmodels.aggregation.mallows import Mallows, MallowsMixture
from rankmodels.permutations import inverse
from rankmodels.studies.study import Study

__all__ = [
    "CANDIDATES",
    "DEFAULT_VOTERS",
    "DEFAULT_WEIGHTS",
    "EXACT_WEIGHTS",
    "EXPERIMENTS",
    "MAX_VOTES_PER_TASK",
    "PHI",
    "STUDY_RULES",
    "aggregation_study",
    "aggregation_task",
    "crossing_table",
    "exact_study",
    "experiment_mixture",
    "score_gaps",
]

CANDIDATES = ("A", "B", "C", "D", "E")
EXPERIMENTS = {
    1: (("D", "E", "A", "B", "C"), ("B", "C", "D", "E", "A")),
    2: (("A", "B", "C", "D", "E"), ("B", "C", "D", "E", "A")),
}
"""Experiment -> (Z1, Z2), centres best first."""
STUDY_RULES = ("borda", "plurality", "antiplurality", "log", "squared")
PHI = 0.8
DEFAULT_WEIGHTS = (0.51, *np.round(np.arange(0.55, 1.0001, 0.05), 2).tolist())
DEFAULT_VOTERS = (25, 100, 1000)
EXACT_WEIGHTS = tuple(np.round(np.arange(0.51, 1.0001, 0.01), 2).tolist())
"""The fine grid of the exact part (cheap: no sampling)."""
MAX_VOTES_PER_TASK = 10**8
_A, _B = 0, 1
_TIE_RTOL = 1e-9  # score gaps below this fraction of Omega_h are ties (as in the rules)
_FLAT_P = 1e-12  # P(A above B) changing less than this between w = 0 and 1 does not change


def experiment_mixture(experiment: int, weight: float, phi: float = PHI) -> MallowsMixture:
    """``weight Mallows(Z1, phi) + (1 - weight) Mallows(Z2, phi)`` of ``experiment``."""
    if experiment not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {experiment!r}")
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight must be in [0, 1], got {weight}")
    index = {name: k for k, name in enumerate(CANDIDATES)}
    centres = [np.array([index[c] for c in z]) for z in EXPERIMENTS[experiment]]
    return MallowsMixture(np.array([weight, 1.0 - weight]), tuple(Mallows(c, phi) for c in centres))


def _score_vectors(rules: Sequence[str]) -> np.ndarray:
    """``(R, n)`` score vectors, each divided by its ``Omega_h``."""
    n = len(CANDIDATES)
    return np.stack(
        [score_vector(r, n) / positional_axioms(score_vector(r, n)).Omega for r in rules]
    )


def _success(gap: np.ndarray) -> np.ndarray:
    """1 when A is above B, 0 when below, 1/2 on a tie (gaps normalised by ``Omega_h``)."""
    return np.where(gap > _TIE_RTOL, 1.0, np.where(gap < -_TIE_RTOL, 0.0, 0.5))


def score_gaps(orders: np.ndarray, rules: Sequence[str] = STUDY_RULES) -> np.ndarray:
    """``(R, T)`` normalised gaps ``(f(A) - f(B)) / Omega_h`` of ``T`` profiles of ``N`` votes
    each, ``orders`` ``(T, N, n)`` best first: ``f(x)`` is the mean score of ``x`` (eq. 4.5)."""
    rank = inverse(orders)
    H = _score_vectors(rules)
    return (H[:, rank[..., _A]] - H[:, rank[..., _B]]).mean(axis=-1)


def exact_study(
    weights: Sequence[float] = DEFAULT_WEIGHTS,
    phi: float = PHI,
    rules: Sequence[str] = STUDY_RULES,
) -> xr.Dataset:
    """Parts (a) and (c) of the study for every experiment, ``weight`` and rule (module docs).

    Variables: ``p_a_above_b`` (experiment, weight); ``score_gap``, ``success``, ``bound_lower``,
    ``bound_upper``, ``omega_eff``, ``Omega_eff``, ``threshold`` (the ``gamma`` above which the
    rule succeeds, ``Omega_eff / (Omega_eff + omega_eff)``) per (experiment, weight, rule);
    ``w_success``, ``w_guaranteed`` per (experiment, rule); ``w_majority`` per experiment; and
    the rule margins ``Omega_h``, ``omega_h``, ``omega1_h``, ``eps_strong_condorcet`` per rule.
    Gaps and margins are divided by ``Omega_h``. ``score_gap`` and ``success`` come from the
    scores of :func:`~rankmodels.aggregation.aggregate` on the exact marginals.
    """
    weights = [float(w) for w in weights]
    experiments = sorted(EXPERIMENTS)
    n = len(CANDIDATES)
    axioms = [positional_axioms(score_vector(r, n)) for r in rules]
    Omega = np.array([ax.Omega for ax in axioms])
    ratio = np.array([ax.omega for ax in axioms]) / Omega
    eps = np.array([ax.eps_strong_condorcet for ax in axioms])
    H = _score_vectors(rules)
    diff = H[:, :, None] - H[:, None, :]  # h(a) - h(b), normalised, for A at a and B at b
    a_above = np.triu(np.ones((n, n), dtype=bool), 1)

    def split(J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(gamma omega_eff, (1 - gamma) Omega_eff)`` per rule from joint positions ``J``."""
        return (diff * (J * a_above)).sum(axis=(1, 2)), -(diff * (J * a_above.T)).sum(axis=(1, 2))

    shape = (len(experiments), len(weights), len(rules))
    gap, plus, minus = np.empty(shape), np.empty(shape), np.empty(shape)
    gamma = np.empty(shape[:2])
    w_success = np.empty((len(experiments), len(rules)))
    w_guaranteed = np.empty((len(experiments), len(rules)))
    w_majority = np.empty(len(experiments))
    for e, experiment in enumerate(experiments):
        ends = [experiment_mixture(experiment, w, phi) for w in (1.0, 0.0)]
        g1, g0 = (np.subtract(*split(m.pair_positions(_A, _B))) for m in ends)
        w_success[e] = _crossing(g0, g1, 0.0, _TIE_RTOL)  # the gap w g1 + (1 - w) g0
        p1, p0 = (m.pairwise[_A, _B] for m in ends)
        w_majority[e] = _crossing(p0, p1, 0.5, _FLAT_P)
        w_guaranteed[e] = _crossing(p0, p1, 0.5 + eps, _FLAT_P)
        for i, w in enumerate(weights):
            mixture = experiment_mixture(experiment, w, phi)
            gamma[e, i] = mixture.pairwise[_A, _B]
            plus[e, i], minus[e, i] = split(mixture.pair_positions(_A, _B))
            marginals = mixture.marginals(CANDIDATES)
            for r, rule in enumerate(rules):
                scores = aggregate(marginals, rule).scores
                gap[e, i, r] = (scores[_A] - scores[_B]) / Omega[r]
    g = gamma[:, :, None]
    omega_eff = _conditional(plus, g)  # gamma = 0 or 1: one side is empty, NaN
    Omega_eff = _conditional(minus, 1 - g)
    dims3 = ("experiment", "weight", "rule")
    return xr.Dataset(
        {
            "p_a_above_b": (("experiment", "weight"), gamma),
            "score_gap": (dims3, gap),
            "success": (dims3, _success(gap)),
            "bound_lower": (dims3, g * ratio - (1 - g)),  # eq. (4.6) / Omega_h
            "bound_upper": (dims3, g - (1 - g) * ratio),
            "omega_eff": (dims3, omega_eff),
            "Omega_eff": (dims3, Omega_eff),
            "threshold": (dims3, _conditional(Omega_eff, Omega_eff + omega_eff)),
            "w_success": (("experiment", "rule"), w_success),
            "w_guaranteed": (("experiment", "rule"), w_guaranteed),
            "w_majority": (("experiment",), w_majority),
            "Omega_h": (("rule",), Omega),
            "omega_h": (("rule",), [ax.omega for ax in axioms]),
            "omega1_h": (("rule",), [ax.omega1 for ax in axioms]),
            "eps_strong_condorcet": (("rule",), eps),
        },
        coords={"experiment": experiments, "weight": weights, "rule": list(rules)},
        attrs={
            "phi": phi,
            "candidates": ",".join(CANDIDATES),
            "centres": "; ".join(
                f"experiment {x}: Z1 = {''.join(z1)}, Z2 = {''.join(z2)}"
                for x, (z1, z2) in EXPERIMENTS.items()
            ),
            "normalisation": "score gaps and margins divided by Omega_h",
            "no_crossing": no_crossing_reason(phi),
        },
    )


def no_crossing_reason(phi: float) -> str:
    """Why ``w_success`` and ``w_majority`` are NaN at this ``phi`` (empty when they exist).

    At ``phi = 1`` both components are the uniform distribution, so the mixture does not depend
    on ``w``: A and B tie under every rule and in the majority for every weight.
    """
    if phi < 1.0:
        return ""
    return (
        "phi = 1: both components are uniform, so the mixture is the same for every w; A and B "
        "tie under every rule and in the majority (success 1/2), and no weight makes either "
        "win: w_success, w_majority and w_guaranteed are NaN"
    )


def _crossing(at0: float | np.ndarray, at1: float | np.ndarray, level, flat: float) -> np.ndarray:
    """The ``w`` where ``(1 - w) at0 + w at1`` equals ``level``: ``(level - at0) / (at1 - at0)``
    elementwise, NaN where the line is flat (``|at1 - at0| <= flat``: no single crossing)."""
    at0, at1, level = np.broadcast_arrays(*map(np.asarray, (at0, at1, level)))
    slope = at1 - at0
    flat_line = np.abs(slope) <= flat
    return np.where(flat_line, np.nan, (level - at0) / np.where(flat_line, 1.0, slope))


def _conditional(part: np.ndarray, probability: np.ndarray) -> np.ndarray:
    """``part / probability``, NaN where the probability is 0 (the condition never holds)."""
    probability = np.broadcast_to(probability, part.shape)
    empty = probability <= 0.0
    return np.where(empty, np.nan, part / np.where(empty, 1.0, probability))


def crossing_table(exact: xr.Dataset) -> pd.DataFrame:
    """Per experiment and rule: ``w_success`` (the rule ranks A above B for larger ``w``), its
    order among the rules (1 = earliest), ``threshold`` (the ``P_{A<B}`` it needs there,
    ``Omega_eff / (Omega_eff + omega_eff)`` at ``w_success``), ``eps_strong_condorcet`` (the
    worst-case margin it needs) and ``w_guaranteed``; plus ``w_majority`` per experiment.
    Where a rule has no crossing (``w_success`` NaN, see :func:`no_crossing_reason`) its
    ``order`` and ``threshold`` are missing too."""
    rows = []
    for experiment in exact["experiment"].values:
        part = exact.sel(experiment=experiment)
        order = part["w_success"].to_pandas().rank(method="first").astype("Int64")
        for rule in part["rule"].values:
            w_star = float(part["w_success"].sel(rule=rule))
            threshold = np.nan
            if 0.0 <= w_star <= 1.0:
                at = experiment_mixture(int(experiment), w_star, float(exact.attrs["phi"]))
                threshold = float(at.pairwise[_A, _B])
            rows.append(
                {
                    "experiment": int(experiment),
                    "rule": str(rule),
                    "w_success": w_star,
                    "order": order[rule],
                    "threshold": threshold,
                    "eps_strong_condorcet": float(exact["eps_strong_condorcet"].sel(rule=rule)),
                    "w_guaranteed": float(part["w_guaranteed"].sel(rule=rule)),
                    "w_majority": float(part["w_majority"]),
                }
            )
    return pd.DataFrame(rows)


def aggregation_task(params: dict[str, Any], seed: np.random.SeedSequence) -> dict[str, float]:
    """One replicate of part (b): ``trials`` profiles of ``voters`` votes from the mixture of
    ``experiment`` at ``weight`` (and ``phi``). Returns, per rule, the fraction of profiles on
    which it ranks A above B (ties 1/2), and ``majority``: the fraction on which more voters
    rank A above B than B above A (ties 1/2)."""
    voters, trials = int(params["voters"]), int(params["trials"])
    mixture = experiment_mixture(int(params["experiment"]), float(params["weight"]), params["phi"])
    orders = mixture.sample(voters * trials, np.random.default_rng(seed))
    orders = orders.reshape(trials, voters, len(CANDIDATES))
    success = _success(score_gaps(orders)).mean(axis=1)
    rank = inverse(orders)
    lead = (rank[..., _A] < rank[..., _B]).mean(axis=1) - 0.5
    metrics = dict(zip(STUDY_RULES, success.tolist(), strict=True))
    metrics["majority"] = float(_success(lead).mean())
    return metrics


def aggregation_study(
    *,
    weights: Sequence[float] = DEFAULT_WEIGHTS,
    voters: Sequence[int] = DEFAULT_VOTERS,
    phi: float = PHI,
    replicates: int = 20,
    trials: int = 50,
    seed: int = 0,
) -> Study:
    """Part (b), Figure 4.1: grid ``experiment x voters x weight``, ``replicates`` paired seeds
    of ``trials`` profiles each. ValueError for weights outside [0, 1], ``phi`` outside
    (0, 1], non-positive sizes, or more than ``MAX_VOTES_PER_TASK`` votes in one task."""
    if any(not 0.0 <= w <= 1.0 for w in weights):
        raise ValueError(f"weights must be in [0, 1], got {list(weights)}")
    if not 0.0 < phi <= 1.0:
        raise ValueError(f"phi must be in (0, 1], got {phi}")
    if any(int(v) != v or v < 1 for v in voters) or trials < 1:
        raise ValueError(
            f"voters and trials must be positive integers, got {list(voters)}, {trials}"
        )
    if max(voters) * trials > MAX_VOTES_PER_TASK:
        raise ValueError(
            f"voters x trials must be at most {MAX_VOTES_PER_TASK:,} (the votes one task holds in "
            f"memory), got {int(max(voters))} x {trials}"
        )
    return Study(
        name="aggregation",
        task=aggregation_task,
        grid={
            "experiment": sorted(EXPERIMENTS),
            "voters": [int(v) for v in voters],
            "weight": [float(w) for w in weights],
        },
        replicates=replicates,
        seed=seed,
        fixed={"phi": float(phi), "trials": int(trials)},
    )
