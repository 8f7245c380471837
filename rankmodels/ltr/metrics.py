"""Ranking metrics on hard rankings and as expectations under a doubly-stochastic matrix.

Conventions (positions ``p = 0, 1, ...``, position 0 the top; ``order[p]`` = item at ``p``):

* **gain** ``G(r)``: ``"exp2m1"`` = ``2^r - 1`` (SinkProp, Jarvelin-Kekalainen) or
  ``"exp2"`` = ``2^r`` (SoftRank eq. 2).
* **discount** ``D(p)``: ``"log2"`` = ``1 / log2(2 + p)`` (``1/log2(1+k)`` for 1-based ``k``)
  or ``"sinkprop"`` = ``1`` for ``p < 2`` and ``1 / log2(p + 1)`` after (SinkProp section 2.1,
  whose "log_2(-k)" is a garble of ``1/log2(k)`` for 1-based ``k > 2``); or an explicit array.
  Truncation at ``k`` sets ``D(p) = 0`` for ``p >= k``.
* ``DCG@k = sum_p G(r_{order[p]}) D(p)``; ``NDCG@k = DCG@k / IDCG@k`` with ``IDCG@k`` the
  DCG of the ideal order. When ``IDCG@k == 0`` (no relevant document) every order is
  ideal and NDCG is ``undefined`` (default 1, as LightGBM; TF-Ranking uses 0, ``nan``
  drops such queries from a ``nanmean``). It agrees with the NDCG losses, which are 0
  with zero gradient on such queries (``1 - NDCG`` with NDCG = 1).
* Binary metrics (precision, MAP, MRR, RBP) call an item relevant when ``r > threshold``
  (default 0). MAP / MRR are the means over queries of :func:`average_precision` /
  :func:`reciprocal_rank`; a query without relevant documents scores 0 on both.
* ``ERR = sum_p 1/(p+1) R_p prod_{q<p} (1 - R_q)`` with ``R = (2^r - 1) / 2^max_grade``.
* ``RBP = (1 - alpha) sum_p b_{order[p]} alpha^p`` (SinkProp section 2.1).
* ``ARP = sum_j r_j (rank_j + 1) / sum_j r_j`` (average relevant position, 1-based; PiRank
  table 3); undefined (``nan``) without relevant documents.
* ``OPA`` = fraction of the pairs with ``r_i > r_j`` that are ranked ``i`` before ``j``
  (ordered pair accuracy); undefined (``nan``) when all labels are equal.

Every metric takes the relevance and exactly one ranking: ``scores`` (sorted in decreasing
order, ties by index), ``order`` (items best first) or ``dsm`` (a ``(n, n)`` or
``(B, n, n)`` doubly-stochastic matrix ``M[j, p] = P(item j at position p)``).

The *rank-linear* metrics (DCG, NDCG, precision, RBP, ARP) are ``u^T M d`` for an item
weight ``u`` and a position weight ``d`` (SinkProp eq. 3): their expectation under *any*
distribution over permutations with marginal matrix ``M`` is exactly ``u^T M d``. MAP, MRR,
ERR and OPA are not rank-linear, so a DSM does not determine their expectation; for
``dsm=`` input they are averaged over the greedy Birkhoff-von Neumann mixture of ``M``
(:func:`rankmodels.dsm.birkhoff_decomposition`), one particular distribution with those
marginals.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rankmodels.dsm import birkhoff_decomposition
from rankmodels.ltr.batching import RaggedBatch, hard_orders, pad_lists, ragged_batch

__all__ = [
    "DISCOUNTS",
    "GAINS",
    "METRICS",
    "arp",
    "average_precision",
    "dcg",
    "discounts",
    "err",
    "gains",
    "ideal_dcg",
    "ndcg",
    "ndcg_weights",
    "opa",
    "precision",
    "rbp",
    "reciprocal_rank",
]

GAINS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp2m1": lambda r: np.exp2(r) - 1.0,
    "exp2": np.exp2,
}
DISCOUNTS = ("log2", "sinkprop")
"""The named discounts of :func:`discounts` (which also takes an explicit array)."""


def gains(relevance: np.ndarray, kind: str = "exp2m1") -> np.ndarray:
    """Gain ``G(r)`` of each label: ``"exp2m1"`` (``2^r - 1``) or ``"exp2"`` (``2^r``)."""
    if kind not in GAINS:
        raise ValueError(f"gain must be one of {sorted(GAINS)}, got {kind!r}")
    return GAINS[kind](np.asarray(relevance, dtype=float))


def discounts(n: int, kind: str | np.ndarray = "log2", k: int | None = None) -> np.ndarray:
    """Discount ``D(p)`` of positions ``p = 0..n-1``, zero from position ``k`` on.

    ``kind`` is ``"log2"`` (``1/log2(2+p)``), ``"sinkprop"`` (``1`` for ``p < 2``, then
    ``1/log2(p+1)``) or an array of at least ``n`` non-negative values.
    """
    p = np.arange(n, dtype=float)
    if isinstance(kind, str):
        if kind == "log2":
            d = 1.0 / np.log2(2.0 + p)
        elif kind == "sinkprop":
            d = np.where(p < 2, 1.0, 1.0 / np.log2(np.maximum(p, 2.0) + 1.0))
        else:
            raise ValueError(f"discount must be one of {DISCOUNTS} or an array, got {kind!r}")
    else:
        arr = np.asarray(kind, dtype=float)
        if arr.ndim != 1 or arr.shape[0] < n:
            raise ValueError(f"a discount array needs at least {n} entries, got shape {arr.shape}")
        if np.any(arr < 0) or not np.all(np.isfinite(arr)):
            raise ValueError("discounts must be finite and non-negative")
        d = arr[:n].copy()
    if k is not None:
        if k < 1:
            raise ValueError(f"cut-off k must be >= 1, got {k}")
        d[k:] = 0.0
    return d


def ideal_dcg(g: np.ndarray, lengths: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``IDCG`` per query: sorted gains paired with sorted discounts (rearrangement).

    ``g`` is ``(B, n)`` (padding 0), ``d`` the ``(n,)`` truncated discounts.
    """
    mask = np.arange(g.shape[1])[None, :] < lengths[:, None]
    g_sorted = -np.sort(-np.where(mask, g, 0.0), axis=1)
    d_sorted = np.where(mask, np.sort(d)[::-1][None, :], 0.0)
    return (g_sorted * d_sorted).sum(axis=1)


def ndcg_weights(
    batch: RaggedBatch,
    k: int | None = None,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Item and position weights of NDCG@k: ``NDCG = u^T M d`` (SinkProp eq. 4).

    Returns ``u`` ``(B, n)`` = ``G(r) / IDCG@k`` (0 where IDCG is 0), ``d`` ``(n,)`` and the
    ``(B,)`` boolean ``defined`` (IDCG > 0).
    """
    n = batch.scores.shape[1]
    d = discounts(n, discount, k)
    g = np.where(batch.mask, gains(batch.relevance, gain), 0.0)
    idcg = ideal_dcg(g, batch.lengths, d)
    defined = idcg > 0
    u = np.where(defined[:, None], g / np.where(defined, idcg, 1.0)[:, None], 0.0)
    return u, d, defined


# ---------------------------------------------------------------------------- set-up


def _complete_orders(order: object, lengths: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    o = np.asarray(order)
    if o.size and not np.issubdtype(o.dtype, np.integer):
        raise TypeError(f"order must hold integers, got dtype {o.dtype}")
    o = np.atleast_2d(o).astype(np.int64)
    B, n = o.shape
    lens = np.full(B, n, np.int64) if lengths is None else np.asarray(lengths, np.int64)
    out = np.tile(np.arange(n), (B, 1))
    for b in range(B):
        m = lens[b]
        head = o[b, :m]
        if not np.array_equal(np.sort(head), np.arange(m)):
            raise ValueError(
                f"order {b} must be a permutation of 0..{m - 1} in its first {m} slots"
            )
        out[b, :m] = head
    return out, lens


@dataclass(frozen=True)
class _Ranked(RaggedBatch):
    """The relevance of a batch with one ranking per query: hard ``orders`` ``(B, n)`` or
    DSMs ``M`` ``(B, n, n)`` (the other is None)."""

    orders: np.ndarray | None
    M: np.ndarray | None


def _setup(
    relevance: object,
    scores: object | None,
    order: object | None,
    dsm: object | None,
    lengths: object | None,
) -> _Ranked:
    given = [x is not None for x in (scores, order, dsm)]
    if sum(given) != 1:
        raise ValueError("give exactly one of scores=, order= or dsm=")
    if scores is not None:
        b = ragged_batch(scores, relevance, lengths)
        orders = hard_orders(b.scores, b.lengths)
        return _Ranked(b.scores, b.relevance, b.lengths, b.single, orders, None)
    if isinstance(relevance, (list, tuple)) and len(relevance) and np.ndim(relevance[0]) == 1:
        rel, rel_lengths = pad_lists(relevance)
        lengths = rel_lengths if lengths is None else lengths
    else:
        rel = np.asarray(relevance, dtype=float)
    if order is not None:
        orders, lens = _complete_orders(order, lengths)
        batch = ragged_batch(np.zeros(orders.shape), np.atleast_2d(rel), lens)
        return _Ranked(batch.scores, batch.relevance, batch.lengths, rel.ndim == 1, orders, None)
    M = np.asarray(dsm, dtype=float)
    single = M.ndim == 2
    M = M[None] if single else M
    if M.ndim != 3 or M.shape[1] != M.shape[2]:
        raise ValueError(f"dsm must be (n, n) or (B, n, n), got shape {M.shape}")
    batch = ragged_batch(np.zeros(M.shape[:2]), np.atleast_2d(rel), lengths)
    mask = batch.mask
    M = np.where(mask[:, :, None] & mask[:, None, :], M, 0.0)
    for b in range(M.shape[0]):
        m = batch.lengths[b]
        sub = M[b, :m, :m]
        if np.any(sub < -1e-9) or not (
            np.allclose(sub.sum(0), 1.0, atol=1e-6) and np.allclose(sub.sum(1), 1.0, atol=1e-6)
        ):
            raise ValueError(f"dsm {b} is not doubly stochastic (tolerance 1e-6)")
    return _Ranked(batch.scores, batch.relevance, batch.lengths, single, None, M)


def _rank_linear(u: np.ndarray, d: np.ndarray, ranked: _Ranked) -> np.ndarray:
    """``u^T M d`` per query; ``d`` is ``(n,)`` or ``(B, n)``."""
    d2 = np.broadcast_to(d, u.shape)
    if ranked.M is not None:
        return np.einsum("bj,bjp,bp->b", u, ranked.M, d2)
    return (np.take_along_axis(u, ranked.orders, axis=1) * d2).sum(axis=1)


def _mixture(batch: _Ranked, hard: Callable[[np.ndarray, np.ndarray, int], float]) -> np.ndarray:
    """Apply ``hard(relevance_in_order (m,), relevance (m,), m)`` to each query; under a DSM,
    average over its Birkhoff-von Neumann mixture."""
    out = np.empty(batch.scores.shape[0])
    for b in range(out.shape[0]):
        m = int(batch.lengths[b])
        rel = batch.relevance[b, :m]
        if batch.M is None:
            out[b] = hard(rel[batch.orders[b, :m]], rel, m)
        else:
            perms, w = birkhoff_decomposition(batch.M[b, :m, :m])
            vals = np.array([hard(rel[p], rel, m) for p in perms])
            out[b] = float(vals @ w / w.sum())
    return out


def _cut(k: int | None, m: int) -> int:
    return m if k is None else min(k, m)


def _check_k(k: int | None) -> None:
    if k is not None and k < 1:
        raise ValueError(f"cut-off k must be >= 1, got {k}")


# ----------------------------------------------------------------------- metrics

_P = inspect.Parameter
_RANKING = (
    _P("relevance", _P.POSITIONAL_OR_KEYWORD, annotation="object"),
    _P("scores", _P.POSITIONAL_OR_KEYWORD, default=None, annotation="object | None"),
    _P("order", _P.KEYWORD_ONLY, default=None, annotation="object | None"),
    _P("dsm", _P.KEYWORD_ONLY, default=None, annotation="object | None"),
    _P("lengths", _P.KEYWORD_ONLY, default=None, annotation="object | None"),
)


def _metric(kernel: Callable[..., np.ndarray]) -> Callable[..., np.ndarray | float]:
    """The public metric around ``kernel(batch, **options) -> (B,)``.

    The metric is called ``metric(relevance, scores=None, *, order=None, dsm=None,
    lengths=None, **options)`` with exactly one ranking (see the module docstring) and
    returns a float for one list, ``(B,)`` for a batch. ``kernel`` gets the batch with its
    ranking (:class:`_Ranked`).
    """

    @functools.wraps(kernel)
    def metric(
        relevance: object,
        scores: object | None = None,
        *,
        order: object | None = None,
        dsm: object | None = None,
        lengths: object | None = None,
        **options: object,
    ) -> np.ndarray | float:
        batch = _setup(relevance, scores, order, dsm, lengths)
        return batch.per_query(kernel(batch, **options))

    own = list(inspect.signature(kernel).parameters.values())[1:]
    metric.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*_RANKING, *own], return_annotation="np.ndarray | float"
    )
    return metric


@_metric
def dcg(
    batch: _Ranked,
    *,
    k: int | None = None,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
) -> np.ndarray:
    """``DCG@k = sum_p G(r_{order[p]}) D(p)``; ``sum_{j,p} M[j,p] G(r_j) D(p)`` under a DSM."""
    d = discounts(batch.scores.shape[1], discount, k)
    g = np.where(batch.mask, gains(batch.relevance, gain), 0.0)
    return _rank_linear(g, d, batch)


@_metric
def ndcg(
    batch: _Ranked,
    *,
    k: int | None = None,
    gain: str = "exp2m1",
    discount: str | np.ndarray = "log2",
    undefined: float = 1.0,
) -> np.ndarray:
    """``NDCG@k = DCG@k / IDCG@k`` (SinkProp eq. 4 under a DSM); ``undefined`` when
    IDCG = 0 (no relevant document: 1 as LightGBM, since every order is ideal)."""
    u, d, defined = ndcg_weights(batch, k, gain, discount)
    return np.where(defined, _rank_linear(u, d, batch), undefined)


@_metric
def precision(batch: _Ranked, *, k: int | None = None, threshold: float = 0.0) -> np.ndarray:
    """``P@k = (1/k) sum_{p<k} b_{order[p]}``, ``b = r > threshold``; ``k`` = list length if
    omitted (the fraction of relevant documents). SinkProp section 2.2 under a DSM."""
    _check_k(k)
    n = batch.scores.shape[1]
    kk = batch.lengths if k is None else np.full(batch.lengths.shape, float(k))
    p = np.arange(n)[None, :]
    d = np.where(p < kk[:, None], 1.0 / np.maximum(kk, 1)[:, None], 0.0)
    b = (batch.relevance > threshold) & batch.mask
    return _rank_linear(b.astype(float), d, batch)


@_metric
def rbp(batch: _Ranked, *, alpha: float = 0.8, threshold: float = 0.0) -> np.ndarray:
    """Rank-biased precision ``(1 - alpha) sum_p b_{order[p]} alpha^p`` (SinkProp sec. 2.1)."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    d = (1.0 - alpha) * alpha ** np.arange(batch.scores.shape[1], dtype=float)
    b = ((batch.relevance > threshold) & batch.mask).astype(float)
    return _rank_linear(b, d, batch)


@_metric
def arp(batch: _Ranked, *, undefined: float = np.nan) -> np.ndarray:
    """Average relevant position ``sum_j r_j (rank_j + 1) / sum_j r_j`` (lower is better)."""
    total = batch.relevance.sum(axis=1)
    defined = total > 0
    u = batch.relevance / np.where(defined, total, 1.0)[:, None]
    d = np.arange(1, batch.scores.shape[1] + 1, dtype=float)
    return np.where(defined, _rank_linear(u, d, batch), undefined)


@_metric
def average_precision(
    batch: _Ranked, *, k: int | None = None, threshold: float = 0.0
) -> np.ndarray:
    """``AP@k = (1/R) sum_{p<k, b_p} P@(p+1)`` with ``R`` the number of relevant documents
    (0 when ``R = 0``); MAP is its mean over queries."""
    _check_k(k)

    def hard(ranked: np.ndarray, rel: np.ndarray, m: int) -> float:
        b = ranked > threshold
        n_rel = int((rel > threshold).sum())
        if n_rel == 0:
            return 0.0
        kk = _cut(k, m)
        hits = np.cumsum(b[:kk])
        return float((b[:kk] * hits / np.arange(1, kk + 1)).sum() / n_rel)

    return _mixture(batch, hard)


@_metric
def reciprocal_rank(batch: _Ranked, *, k: int | None = None, threshold: float = 0.0) -> np.ndarray:
    """``1 / (p + 1)`` for the first relevant position ``p < k``, else 0; MRR is the mean."""
    _check_k(k)

    def hard(ranked: np.ndarray, rel: np.ndarray, m: int) -> float:
        hit = np.flatnonzero(ranked[: _cut(k, m)] > threshold)
        return 1.0 / (hit[0] + 1.0) if hit.size else 0.0

    return _mixture(batch, hard)


@_metric
def err(batch: _Ranked, *, k: int | None = None, max_grade: float | None = None) -> np.ndarray:
    """Expected reciprocal rank ``sum_{p<k} 1/(p+1) R_p prod_{q<p} (1 - R_q)``,
    ``R = (2^r - 1) / 2^max_grade``; ``max_grade`` defaults to the largest label given."""
    _check_k(k)
    top = float(batch.relevance.max(initial=0.0)) if max_grade is None else float(max_grade)
    if top < batch.relevance.max(initial=0.0):
        raise ValueError(f"max_grade {top} is below the largest label {batch.relevance.max()}")

    def hard(ranked: np.ndarray, rel: np.ndarray, m: int) -> float:
        R = (np.exp2(ranked[: _cut(k, m)]) - 1.0) / np.exp2(top)
        survive = np.concatenate(([1.0], np.cumprod(1.0 - R)[:-1]))
        return float((R * survive / np.arange(1, R.shape[0] + 1)).sum())

    return _mixture(batch, hard)


@_metric
def opa(batch: _Ranked, *, undefined: float = np.nan) -> np.ndarray:
    """Ordered pair accuracy: among pairs with ``r_i > r_j``, the fraction ranked ``i`` first."""

    def hard(ranked: np.ndarray, rel: np.ndarray, m: int) -> float:
        # ranked[p] = label at position p; pairs (p < q) with a label difference.
        diff = ranked[:, None] - ranked[None, :]
        upper = np.triu(np.ones((m, m), dtype=bool), 1)
        n_pairs = int((upper & (diff != 0)).sum())
        if n_pairs == 0:
            return undefined
        return float((upper & (diff > 0)).sum() / n_pairs)

    return _mixture(batch, hard)


METRICS: dict[str, Callable[..., np.ndarray | float]] = {
    "dcg": dcg,
    "ndcg": ndcg,
    "precision": precision,
    "map": average_precision,
    "mrr": reciprocal_rank,
    "err": err,
    "rbp": rbp,
    "arp": arp,
    "opa": opa,
}
"""Metric functions by name (``map`` / ``mrr`` are the per-query AP / RR; average them)."""
