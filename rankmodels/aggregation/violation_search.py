"""Brute-force search over distributions on ``S_n`` (small ``n``) for axiom violations.

Used by the tests to show that the thresholds of :mod:`rankmodels.aggregation.axioms` are
tight, without using their closed forms:

* :func:`positional_violation` -- for a score vector ``h`` the scores are linear in ``P``,
  so the worst distribution over all ``n!`` rankings is a linear programme
  (``scipy.optimize.linprog``): e.g. minimise ``f_P(x) - f_P(y)`` over every ``P`` with
  ``P_{x<y} >= 1/2 + epsilon``. A violation is a distribution where the rule does not
  *strictly* prefer what the axiom demands (a tie counts, theorem 9).
* :func:`search_violation` -- for any rule: random sparse distributions on ``S_n`` run
  through :func:`~rankmodels.aggregation.aggregate` and the profile axiom report.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from rankmodels.aggregation.axioms import profile_axiom_report
from rankmodels.aggregation.profile import Profile
from rankmodels.aggregation.rules import aggregate
from rankmodels.permutations import all_permutations, inverse

__all__ = ["AXIOMS", "positional_violation", "random_profile", "search_violation"]

AXIOMS = ("strong-condorcet", "iia", "majority", "pareto")
_TOL = 1e-9


def _extreme(
    c: np.ndarray, row: np.ndarray, gamma: float, equality: bool, sign: float
) -> tuple[float, np.ndarray]:
    """``min sign * c @ P`` over distributions with ``row @ P = gamma`` (or ``>= gamma``)."""
    m = c.size
    ones = np.ones((1, m))
    if equality:
        res = linprog(sign * c, A_eq=np.vstack([ones, row]), b_eq=[1.0, gamma], bounds=(0, None))
    else:
        res = linprog(
            sign * c, A_ub=-row[None, :], b_ub=[-gamma], A_eq=ones, b_eq=[1.0], bounds=(0, None)
        )
    if res.status != 0:
        raise RuntimeError(f"linear programme failed: {res.message}")
    return sign * float(res.fun), res.x


def positional_violation(
    h: np.ndarray, axiom: str, epsilon: float, n_gamma: int = 21
) -> np.ndarray | None:
    """A distribution on ``S_n`` (``n = len(h)``) violating the epsilon-axiom, or ``None``.

    Returns a ``(n!, )`` probability vector over :func:`rankmodels.permutations.all_permutations`
    (for ``iia`` a ``(2, n!)`` pair ``Q1, Q2`` with equal ``P_{x<y}`` whose score differences
    do not have one strict sign). ``axiom`` is one of :data:`AXIOMS`; ``pareto`` is
    strong Condorcet at ``epsilon = 1/2``. For IIA, ``n_gamma`` values of ``gamma`` in each of
    ``[1/2 + epsilon, 1]`` and ``[0, 1/2 - epsilon]`` are tried.
    """
    h = np.asarray(h, dtype=float)
    n = h.size
    if n < 2 or n > 6:
        raise ValueError(f"brute force works on 2 <= n <= 6 candidates, got {n}")
    rank = inverse(all_permutations(n))  # rank[s, x] = position of x in ranking s
    x, y = 0, 1
    diff = h[rank[:, x]] - h[rank[:, y]]  # f_P(x) - f_P(y) = diff @ P
    above = (rank[:, x] < rank[:, y]).astype(float)
    if axiom in ("strong-condorcet", "pareto"):
        gamma = 1.0 if axiom == "pareto" else 0.5 + epsilon
        low, P = _extreme(diff, above, min(gamma, 1.0), equality=False, sign=1.0)
        return P if low <= _TOL else None
    if axiom == "majority":
        first = (rank[:, x] == 0).astype(float)
        low, P = _extreme(diff, first, min(0.5 + epsilon, 1.0), equality=False, sign=1.0)
        return P if low <= _TOL else None
    if axiom == "iia":
        upper = np.linspace(min(0.5 + epsilon, 1.0), 1.0, n_gamma)
        for gamma in np.concatenate([upper, 1.0 - upper]):
            low, Q1 = _extreme(diff, above, gamma, equality=True, sign=1.0)
            high, Q2 = _extreme(diff, above, gamma, equality=True, sign=-1.0)
            if low <= _TOL and high >= -_TOL:
                return np.stack([Q1, Q2])
        return None
    raise ValueError(f"unknown axiom {axiom!r}; expected one of {AXIOMS}")


def random_profile(n: int, rng: np.random.Generator, support: int = 6) -> Profile:
    """A random distribution on ``S_n`` with at most ``support`` rankings (Dirichlet weights)."""
    orders = np.array([rng.permutation(n) for _ in range(support)], dtype=np.int64)
    return Profile.from_orders(orders, rng.dirichlet(np.ones(support)))


def search_violation(
    rule: str,
    axiom: str,
    n: int,
    rng: np.random.Generator,
    trials: int = 200,
    support: int = 6,
) -> Profile | None:
    """First random profile on which ``rule``'s output breaks ``axiom``, or ``None``.

    ``axiom`` is ``condorcet``, ``majority``, ``pareto`` or ``strong-condorcet`` as judged
    by :func:`~rankmodels.aggregation.axioms.profile_axiom_report` over all optimal rankings.
    """
    for _ in range(trials):
        profile = random_profile(n, rng, support)
        honoured = profile_axiom_report(profile, aggregate(profile, rule))["honoured"]
        if axiom == "strong-condorcet":
            broken = bool(honoured["strong_condorcet_violations"])
        elif axiom in ("condorcet", "majority", "pareto"):
            broken = honoured[axiom] is False
        else:
            raise ValueError(f"unknown axiom {axiom!r}")
        if broken:
            return profile
    return None
