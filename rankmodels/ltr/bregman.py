"""NDCG-consistent Bregman surrogates (dissertation chapter 3, Ravikumar et al. 2011).

With ``r~ = G(r) / ||G(r)||_D`` -- the gains divided by the ideal DCG (eq. 3.2;
:func:`rankmodels.ltr.metrics.ndcg_weights`) -- and a strictly convex ``psi`` with
order-preserving gradient, the surrogate (eq. 3.5)

    phi(s, r) = D_psi(r~, (grad psi)^{-1}(s)) = psi(r~) + psi*(s) - <s, r~>      (eq. 3.28)

is convex in ``s`` and strongly NDCG-consistent; ``grad_s phi = grad psi*(s) - r~``, zero
at ``s = grad psi(r~)``, which orders the documents by gain. (Eq. 3.3 as printed takes
``grad psi(p)``; the Bregman divergence uses ``grad psi(q)``.) The dictionary of section
3.6:

* ``"cross_entropy"``: ``psi(x) = c sum_i (x_i log x_i - x_i)``, ``psi*(s) = c sum e^{s/c}``
  (``c = 0.01`` in the dissertation, default 1 here to keep ``e^{s/c}`` in range);
* ``"square"``: ``psi(x) = ||x||_2^2``, ``phi = ||r~ - s/2||^2``;
* ``"qnorm"``: ``psi(x) = ||x||_q^2`` with ``q = ln(m) + 2`` (``m`` documents),
  ``psi*(s) = ||s||_p^2 / 4`` with ``1/p + 1/q = 1``.

The Hessian of ``phi`` in ``s`` is that of ``psi*``; its diagonal (Newton boosting) is
``1/2`` (square), ``e^{s_i/c} / c`` (cross-entropy) and, for the q-norm,

    (1/2) [(2 - p) ||s||_p^{2-2p} |s_i|^{2p-2} + (p - 1) ||s||_p^{2-p} |s_i|^{p-2}],

which is infinite where ``s_i = 0`` (``p < 2``: ``psi*`` is not twice differentiable
there); those documents get the square surrogate's ``1/2`` instead.

The cut-off ``k`` (default 10; None: the whole list, eq. 3.2 as printed) truncates the
discount of the norm, ``1/D(j) = 0`` for positions ``j > k``, so that ``||G(r)||_D`` is the
ideal DCG@k, the normaliser of NDCG@k (as section 3.6 computes the metric: "its
normalization uses the truncated errors as well"). It is the normaliser under which the
surrogate is consistent for NDCG@k: for one query whose labels are random given its
documents, the expected surrogate ``psi*(s) - <s, E r~> + const`` is minimised at
``grad psi(E r~)``, which orders the documents by ``E r~_i``, while the expected NDCG@k of
a ranking ``pi``, ``sum_i E[G(r_i) / IDCG@k(r)] D_k(pi(i))``, is largest for the order by
``E[G(r_i) / IDCG@k(r)]`` (rearrangement; ``D_k`` is non-increasing). With the whole
list's IDCG the two orders can differ (tested by brute force). The cut-off changes only
how the queries are weighed against one another, not the order within a query with known
labels.

Mixtures (section 3.5, :func:`bregman_mixture_loss`): with weights ``alpha >= 0``
normalised to sum 1, ``phi_alpha = sum_i alpha_i phi_{psi_i}``. By eq. 3.28 this is
``psi_alpha*(s) - <s, r~>`` (+ terms free of ``s``) with ``psi_alpha* = sum_i alpha_i
psi_i*``: the Bregman surrogate of ``psi_alpha = (sum_i alpha_i psi_i*)*``, strictly convex
with an order-preserving gradient (a convex combination of order-preserving maps), hence
again strongly NDCG-consistent. The dictionary is mixed through the conjugates -- linear
in ``alpha`` and in closed form, as section 3.5.1 wants -- rather than as
``sum_i alpha_i psi_i``, whose conjugate has no closed form for the q-norm.

Scale (sections 2.4.1, 3.6.3: "the multiplicative factor in psi is significant"): option
``scale = beta > 0`` takes the surrogate of ``beta psi``. As ``(beta psi)*(s) =
beta psi*(s / beta)``,

    phi_beta(s, r) = beta phi(s / beta, r),     grad_s phi_beta(s, r) = grad psi*(s / beta) - r~,

minimised at ``beta grad psi(r~)``: the same ordering, but a fitted ranker (boosted with a
finite number of steps, or l2-penalised) changes with ``beta``. For the cross-entropy
surrogate ``beta`` multiplies ``c``. The weights ``alpha in [0, 1]^d`` of section 3.5.1
(``psi = sum_i alpha_i psi_i``, not normalised) are ``scale = sum_i alpha_i`` with the
normalised weights ``alpha / sum_i alpha_i``: then ``psi_{lambda alpha} = lambda psi_alpha``
and ``alpha = e_i`` is ``psi_i`` itself, as in the dissertation.
The Hessian's diagonal of ``phi_beta`` is that of ``phi`` at ``s / beta``, over ``beta``.
"""

from __future__ import annotations

import numpy as np

from rankmodels.ltr.batching import LossResult, RaggedBatch, ragged_batch
from rankmodels.ltr.metrics import ndcg_weights

__all__ = [
    "SURROGATES",
    "bregman_loss",
    "bregman_minimiser",
    "bregman_mixture_loss",
    "bregman_mixture_with_hessian",
    "bregman_with_hessian",
]

SURROGATES = ("cross_entropy", "square", "qnorm")


def _q_of(lengths: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(lengths, 1)) + 2.0


def _norm(x: np.ndarray, p: np.ndarray) -> np.ndarray:
    return (np.abs(x) ** p[:, None]).sum(axis=1) ** (1.0 / p)


def _target(
    batch: RaggedBatch,
    surrogate: str,
    c: float,
    scale: float,
    k: int | None,
    gain: str,
    discount: object,
) -> np.ndarray:
    """``r~ = G(r) / IDCG@k`` ``(B, n)`` (eq. 3.2 with the discount cut after ``k``; module
    docstring) after checking the options."""
    if surrogate not in SURROGATES:
        raise ValueError(f"surrogate must be one of {SURROGATES}, got {surrogate!r}")
    if not c > 0:
        raise ValueError(f"c must be positive, got {c}")
    if not 0 < scale < np.inf:
        raise ValueError(f"scale must be positive and finite, got {scale}")
    return ndcg_weights(batch, k, gain, discount)[0]


def bregman_loss(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    surrogate: str = "square",
    c: float = 1.0,
    scale: float = 1.0,
    k: int | None = 10,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
) -> LossResult:
    """The Bregman surrogate of ``scale * psi``, ``scale * phi(s / scale, r)`` with
    ``phi`` of eq. 3.28 (value >= 0) and the target normalised by the ideal DCG@k, and its
    gradient ``grad phi(s / scale)``."""
    args = (scores, relevance, lengths, surrogate, c, scale, k, gain, discount)
    return _bregman(*args, hessian=False)[0]


def bregman_with_hessian(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    surrogate: str = "square",
    c: float = 1.0,
    scale: float = 1.0,
    k: int | None = 10,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
) -> tuple[LossResult, np.ndarray]:
    """:func:`bregman_loss` and the diagonal of its Hessian (module docstring)."""
    args = (scores, relevance, lengths, surrogate, c, scale, k, gain, discount)
    return _bregman(*args, hessian=True)  # type: ignore[return-value]


def _bregman(
    scores: object,
    relevance: object,
    lengths: object | None,
    surrogate: str,
    c: float,
    scale: float,
    k: int | None,
    gain: str,
    discount: str | np.ndarray,
    *,
    hessian: bool,
) -> tuple[LossResult, np.ndarray | None]:
    """:func:`bregman_with_hessian`; the Hessian's diagonal only when ``hessian`` (None
    otherwise: the loss alone is what training and line searches evaluate most)."""
    batch = ragged_batch(scores, relevance, lengths)
    mask = batch.mask
    rt = _target(batch, surrogate, c, scale, k, gain, discount)
    s = np.where(mask, batch.scores, 0.0) / scale
    if surrogate == "square":
        value = ((rt - s / 2.0) ** 2).sum(axis=1)
        grad = s / 2.0 - rt
        hess = np.full(s.shape, 0.5) if hessian else None
    elif surrogate == "cross_entropy":
        with np.errstate(divide="ignore", invalid="ignore"):
            xlogx = np.where(rt > 0, rt * np.log(np.where(rt > 0, rt, 1.0)), 0.0)
        es = np.where(mask, np.exp(s / c), 0.0)
        value = c * (xlogx - rt).sum(axis=1) + c * es.sum(axis=1) - (s * rt).sum(axis=1)
        grad = es - rt
        hess = es / c if hessian else None
    else:
        q = _q_of(batch.lengths)
        p = q / (q - 1.0)
        ns = _norm(s, p)
        safe = np.where(ns > 0, ns, 1.0)
        value = _norm(rt, q) ** 2 + ns**2 / 4.0 - (s * rt).sum(axis=1)
        dual = 0.5 * safe[:, None] ** (2.0 - p[:, None]) * np.abs(s) ** (p[:, None] - 1.0)
        grad = np.where(ns[:, None] > 0, dual * np.sign(s), 0.0) - rt
        hess = _qnorm_curvature(s, p, ns, safe) if hessian else None
    result = batch.result(scale * value, grad)
    if hess is None:
        return result, None
    return result, batch.per_item(np.where(mask, hess, 0.0) / scale)


def _qnorm_curvature(s: np.ndarray, p: np.ndarray, ns: np.ndarray, safe: np.ndarray) -> np.ndarray:
    """The q-norm surrogate's Hessian diagonal (module docstring), ``1/2`` where ``s_i = 0``."""
    pc = p[:, None]
    with np.errstate(divide="ignore"):
        a = np.abs(s)
        curv = 0.5 * (
            (2.0 - pc) * safe[:, None] ** (2.0 - 2.0 * pc) * a ** (2.0 * pc - 2.0)
            + (pc - 1.0) * safe[:, None] ** (2.0 - pc) * a ** (pc - 2.0)
        )
    return np.where((a > 0) & (ns[:, None] > 0), curv, 0.5)


def bregman_mixture_loss(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    cross_entropy: float = 1.0,
    square: float = 1.0,
    qnorm: float = 1.0,
    c: float = 1.0,
    scale: float = 1.0,
    k: int | None = 10,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
) -> LossResult:
    """``phi_alpha = scale sum_i alpha_i phi_{psi_i}(s / scale)`` over the dictionary
    (module docstring), the weights ``alpha`` (``cross_entropy``, ``square``, ``qnorm``;
    >= 0, not all 0) normalised to sum 1; ``c`` is the cross-entropy surrogate's constant,
    ``scale`` the overall scale ``beta`` of ``psi_alpha``, ``k`` the cut-off of the
    target's normaliser."""
    weights = {"cross_entropy": cross_entropy, "square": square, "qnorm": qnorm}
    args = (scores, relevance, lengths, weights, c, scale, k, gain, discount)
    return _bregman_mixture(*args, hessian=False)[0]


def bregman_mixture_with_hessian(
    scores: object,
    relevance: object,
    lengths: object | None = None,
    *,
    cross_entropy: float = 1.0,
    square: float = 1.0,
    qnorm: float = 1.0,
    c: float = 1.0,
    scale: float = 1.0,
    k: int | None = 10,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
) -> tuple[LossResult, np.ndarray]:
    """:func:`bregman_mixture_loss` and the diagonal of its Hessian, the same mixture of
    the surrogates' diagonals."""
    weights = {"cross_entropy": cross_entropy, "square": square, "qnorm": qnorm}
    args = (scores, relevance, lengths, weights, c, scale, k, gain, discount)
    return _bregman_mixture(*args, hessian=True)  # type: ignore[return-value]


def _bregman_mixture(
    scores: object,
    relevance: object,
    lengths: object | None,
    weights: dict[str, float],
    c: float,
    scale: float,
    k: int | None,
    gain: str,
    discount: str | np.ndarray,
    *,
    hessian: bool,
) -> tuple[LossResult, np.ndarray | None]:
    """The mixture of :func:`_bregman`'s surrogates (its Hessian only when ``hessian``)."""
    if not all(0 <= w < np.inf for w in weights.values()) or sum(weights.values()) <= 0:
        raise ValueError(f"mixture weights must be finite, >= 0 and not all 0, got {weights}")
    total = sum(weights.values())
    parts = [
        (
            weight / total,
            _bregman(
                scores, relevance, lengths, name, c, scale, k, gain, discount, hessian=hessian
            ),
        )
        for name, weight in weights.items()
        if weight > 0
    ]
    value = sum(w * np.asarray(part.value) for w, (part, _) in parts)
    grad = sum(w * part.grad for w, (part, _) in parts)
    hess = sum(w * h for w, (_, h) in parts) if hessian else None
    return LossResult(float(value) if np.ndim(value) == 0 else value, grad), hess


def bregman_minimiser(
    relevance: object,
    lengths: object | None = None,
    *,
    surrogate: str = "square",
    c: float = 1.0,
    scale: float = 1.0,
    k: int | None = 10,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
) -> np.ndarray:
    """Scores ``scale * grad psi(r~)`` minimising :func:`bregman_loss` (``-inf`` for zero
    gain under the cross-entropy surrogate); they sort documents by gain (NDCG
    consistency)."""
    rel = relevance
    batch = ragged_batch(np.zeros(np.shape(np.asarray(rel, dtype=float))), rel, lengths)
    rt = _target(batch, surrogate, c, scale, k, gain, discount)
    if surrogate == "square":
        out = 2.0 * rt
    elif surrogate == "cross_entropy":
        with np.errstate(divide="ignore"):
            out = c * np.log(rt)
    else:
        q = _q_of(batch.lengths)
        nr = _norm(rt, q)
        safe = np.where(nr > 0, nr, 1.0)
        out = 2.0 * safe[:, None] ** (2.0 - q[:, None]) * np.abs(rt) ** (q[:, None] - 1.0)
    return batch.per_item(np.where(batch.mask, scale * out, 0.0))
