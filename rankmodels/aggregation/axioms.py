"""Axiom margins of positional rules and the axiom report of one profile (chapter 4).

Margins of a score vector ``h`` (positions ``i < j``, 1-based as in the paper)
------------------------------------------------------------------------------
* ``Omega_h = max_{i<j} h(i) - h(j)`` -- the largest score gap;
* ``omega_h = min_{i<j} h(i) - h(j)`` -- the smallest (negative if ``h`` ever increases);
* ``omega^1_h = min_{j>1} h(1) - h(j)`` -- the smallest lead of first place.

For ``gamma = P_{x<y}`` every profile obeys (eq. 4.6), tightly,

    gamma omega_h - (1-gamma) Omega_h  <=  f_P(x) - f_P(y)  <=  gamma Omega_h - (1-gamma) omega_h

which gives the epsilon thresholds (an epsilon-axiom holds **iff** ``epsilon > threshold``;
a threshold of 1/2 means the axiom fails for every non-vacuous epsilon):

* epsilon-IIA (proposition 14): ``1/2 (Omega - omega) / |Omega + omega|`` when
  ``Omega omega > 0`` (else 1/2). For non-increasing ``h`` this is the paper's
  ``1/2 (Omega - omega) / (Omega + omega)``.
* epsilon-strong Condorcet (proposition 21): ``1/2 (Omega - omega) / (Omega + omega)`` when
  ``omega > 0`` (else 1/2). Strong Condorcet implies IIA (proposition 6).
* epsilon-majority (proposition 19): ``1/2 (Delta - omega^1) / (Delta + omega^1)`` when
  ``omega^1 > 0`` (else 1/2), with ``Delta = max_{i != 1, j != i} h(j) - h(i)`` the largest
  score a candidate not in first place can concede to another. Proposition 19 writes
  ``max(Omega, -omega)`` for ``Delta``; the two agree whenever ``h`` is non-increasing
  (all rules of table 4.1) and ``Delta`` is never larger, so this threshold is the tight one
  for every ``h`` (checked by :mod:`rankmodels.aggregation.violation_search`).

Exact axioms: Pareto iff ``h`` strictly decreasing (prop. 15), monotonicity iff non-increasing
(prop. 16), consistency always (prop. 17), IIA never (prop. 13), majority iff the majority
threshold is 0 with ``omega^1 > 0`` (prop. 18), Condorcet iff the strong-Condorcet threshold is
0 with ``omega > 0`` (only possible for n = 2, prop. 20).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from rankmodels.aggregation.condorcet import MARGIN_TOL, condorcet_winner
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.result import Aggregation

__all__ = [
    "PositionalAxioms",
    "excess",
    "majority_winner",
    "pareto_pairs",
    "positional_axioms",
    "profile_axiom_report",
]


@dataclass(frozen=True)
class PositionalAxioms:
    """Margins, epsilon thresholds and exact axioms of one score vector (tables 4.1, 4.2)."""

    n: int
    Omega: float
    omega: float
    omega1: float
    Delta: float
    eps_iia: float
    eps_strong_condorcet: float
    eps_majority: float
    pareto: bool
    monotonicity: bool
    consistency: bool
    iia: bool
    majority: bool
    condorcet: bool

    def as_dict(self) -> dict[str, float | bool | int]:
        return asdict(self)


def _ratio(top: float, bottom: float) -> float:
    return min(0.5, 0.5 * top / bottom) if bottom > 0 else 0.5


def positional_axioms(h: np.ndarray, atol: float = 1e-12) -> PositionalAxioms:
    """Margins and axiom thresholds of the score vector ``h`` (``h[0]`` = first place)."""
    h = np.asarray(h, dtype=float)
    if h.ndim != 1 or h.size < 2:
        raise ValueError(f"a score vector needs at least 2 positions, got shape {h.shape}")
    if not np.all(np.isfinite(h)):
        raise ValueError("score vector values must be finite")
    n = h.size
    gaps = h[:, None] - h[None, :]  # gaps[i, j] = h(i) - h(j)
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    Omega = float(gaps[upper].max())
    omega = float(gaps[upper].min())
    omega1 = float(gaps[0, 1:].min())
    conceded = ~np.eye(n, dtype=bool)
    conceded[0] = False  # i != 1 is the loser's position, j != i the winner's
    Delta = float((-gaps)[conceded].max())
    if abs(Omega * omega) > atol and Omega * omega > 0:
        eps_iia = _ratio(Omega - omega, abs(Omega + omega))
    else:
        eps_iia = 0.5
    eps_sc = _ratio(Omega - omega, Omega + omega) if omega > atol else 0.5
    eps_maj = _ratio(Delta - omega1, Delta + omega1) if omega1 > atol else 0.5
    eps_maj = max(0.0, eps_maj)
    return PositionalAxioms(
        n=n,
        Omega=Omega,
        omega=omega,
        omega1=omega1,
        Delta=Delta,
        eps_iia=eps_iia,
        eps_strong_condorcet=eps_sc,
        eps_majority=eps_maj,
        pareto=omega > atol,
        monotonicity=bool(np.all(np.diff(h) <= atol)),
        consistency=True,
        iia=False,
        majority=omega1 > atol and eps_maj <= atol,
        condorcet=omega > atol and eps_sc <= atol,
    )


# --------------------------------------------------------------------------- one profile
def excess(values: np.ndarray, level: float) -> np.ndarray:
    """``values - level`` with differences within :data:`MARGIN_TOL` (rounding noise of
    probabilities) set to exactly 0, so that strict comparisons with 0 are exact: ``> 0``
    is a strict majority and exactly one half is never one."""
    diff = np.asarray(values, dtype=float) - level
    return np.where(np.abs(diff) <= MARGIN_TOL, 0.0, diff)


def majority_winner(profile: Profile) -> int | None:
    """The candidate ranked first with probability above 1/2 (axiom D9), or ``None``."""
    lead = excess(profile.first_place, 0.5)
    x = int(np.argmax(lead))
    return x if lead[x] > 0 else None


def pareto_pairs(profile: Profile) -> list[tuple[int, int]]:
    """Pairs ``(x, y)`` with ``x`` above ``y`` on every ballot (``P_{x<y} = 1``, axiom D4)."""
    xs, ys = np.nonzero(excess(profile.pairwise, 1.0) == 0)
    return [(int(x), int(y)) for x, y in zip(xs, ys, strict=True)]


def profile_axiom_report(
    profile: Profile, result: Aggregation, h: np.ndarray | None = None
) -> dict[str, object]:
    """What the data say and whether ``result`` honours each axiom on them.

    Returned keys (candidate names, JSON-ready):

    * ``condorcet_winner``, ``majority_winner``: names or ``None``;
    * ``pareto_pairs``: ``[x, y]`` with every ballot ranking ``x`` above ``y``;
    * ``pairwise``: per unordered pair ``{"x", "y", "p": P_{x<y}, "margin": |P_{x<y} - 1/2|}``;
    * ``honoured``: for ``pareto``, ``condorcet``, ``majority`` -- ``True``/``False`` over
      *all* optimal rankings of ``result``, ``None`` when the premise is absent
      (``over_all_optimal_rankings`` is False when they could be judged only on the
      rankings listed up to ``max_ties``, see :meth:`Aggregation.always_above`);
      ``strong_condorcet_violations``: pairs with ``P_{x<y} > 1/2`` that some optimal
      ranking reverses, and ``strong_condorcet_epsilon``: the largest margin among them
      (the output honours epsilon-strong Condorcet on this profile for every larger epsilon);
    * ``rule``: for positional rules, :class:`PositionalAxioms` of ``h``, and
      ``guaranteed_pairs``: how many majority pairs have a margin above the rule's
      strong-Condorcet threshold (those are ordered by majority for any profile with the
      same pairwise marginal).
    """
    names = profile.candidates
    P = profile.pairwise
    n = profile.n
    above, complete = result.always_above()  # x above y in every optimal ranking
    cw = condorcet_winner(P)
    mw = majority_winner(profile)
    pareto = pareto_pairs(profile)

    def all_first(x: int | None) -> bool | None:
        return None if x is None else bool(np.all(np.delete(above[x], x)))

    lead = excess(P, 0.5)  # lead[x, y] > 0: a strict majority ranks x above y
    xs, ys = np.nonzero((lead > 0) & ~above)  # some optimal ranking puts y above x
    violations = [(x, y, float(P[x, y] - 0.5)) for x, y in zip(xs, ys, strict=True)]
    pairs = [
        {"x": names[x], "y": names[y], "p": float(P[x, y]), "margin": float(abs(P[x, y] - 0.5))}
        for x in range(n)
        for y in range(x + 1, n)
    ]
    report: dict[str, object] = {
        "condorcet_winner": None if cw is None else names[cw],
        "majority_winner": None if mw is None else names[mw],
        "pareto_pairs": [[names[x], names[y]] for x, y in pareto],
        "pairwise": pairs,
        "unique": result.unique,
        "honoured": {
            "over_all_optimal_rankings": complete,
            "pareto": None if not pareto else all(bool(above[x, y]) for x, y in pareto),
            "condorcet": all_first(cw),
            "majority": all_first(mw),
            "strong_condorcet_violations": [
                {"x": names[x], "y": names[y], "margin": m} for x, y, m in violations
            ],
            "strong_condorcet_epsilon": max((m for *_, m in violations), default=0.0),
        },
    }
    if h is not None and np.size(h) >= 2:  # margins need two positions
        ax = positional_axioms(h)
        margins = np.abs(P - 0.5)[np.triu_indices(n, 1)]  # |P_{x<y} - 1/2|, either way round
        report["rule"] = {
            **ax.as_dict(),
            "guaranteed_pairs": int(np.sum(excess(margins, ax.eps_strong_condorcet) > 0)),
        }
    return report
