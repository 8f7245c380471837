"""Synthetic LETOR data with a known linear truth; the shipped ``data/letor-sample.txt``.

Query ``b`` gets ``n_b`` documents (``n_b`` uniform on ``docs[0] .. docs[1]``) with
features ``x ~ N(0, I_F)``. A document's utility is ``u = x . w_true + noise * e`` with
``w_true ~ N(0, I_F)`` scaled to unit length and ``e ~ N(0, 1)``; its label is 0, 1 or 2
as ``u`` lies below the 60 % quantile of all utilities, between the 60 % and 85 %
quantiles, or above (so some queries have no relevant document at all). A linear ranker
can recover ``w_true`` up to scale; ``noise`` sets how well.

The sample file is ``sample_text()`` (the settings in :data:`SAMPLE`); regenerate it with
``python -c "import pathlib; from rankmodels.ltr.synthetic import sample_text;
pathlib.Path('data/letor-sample.txt').write_text(sample_text())"``.
"""

from __future__ import annotations

import numpy as np

from rankmodels.ltr.letor import LetorData, format_letor

__all__ = ["SAMPLE", "pirank_synthetic", "sample_text", "synthetic_letor"]

SAMPLE: dict[str, object] = {
    "n_queries": 40,
    "n_features": 5,
    "docs": (4, 14),
    "noise": 0.5,
    "seed": 2024,
}
"""The settings of ``data/letor-sample.txt``."""


def synthetic_letor(
    n_queries: int = 40,
    n_features: int = 5,
    docs: tuple[int, int] = (4, 14),
    noise: float = 0.5,
    seed: int | np.random.Generator = 0,
) -> tuple[LetorData, np.ndarray]:
    """Queries with graded labels from a noisy linear utility (module docstring).

    Returns the data (qids ``"1" .. "n_queries"``) and ``w_true`` ``(n_features,)``.
    """
    if n_queries < 1 or n_features < 1 or not 1 <= docs[0] <= docs[1]:
        raise ValueError("need n_queries >= 1, n_features >= 1 and 1 <= docs[0] <= docs[1]")
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=n_features)
    w_true /= np.linalg.norm(w_true)
    lengths = rng.integers(docs[0], docs[1], endpoint=True, size=n_queries)
    mask = np.arange(docs[1])[None, :] < lengths[:, None]
    features = np.where(mask[:, :, None], rng.normal(size=(n_queries, docs[1], n_features)), 0.0)
    utility = features @ w_true + noise * rng.normal(size=mask.shape)
    cuts = np.quantile(utility[mask], [0.6, 0.85])
    relevance = np.where(mask, np.digitize(utility, cuts), 0).astype(float)
    qids = np.array([str(b + 1) for b in range(n_queries)], dtype=object)
    return LetorData(features, relevance, lengths.astype(np.int64), qids), w_true


def pirank_synthetic(
    n_queries: int = 100,
    docs: tuple[int, int] = (10, 20),
    n_doc_features: int = 6,
    n_query_features: int = 3,
    labels: tuple[int, int] = (0, 4),
    seed: int | np.random.Generator = 0,
) -> LetorData:
    """PiRank appendix E's synthetic queries: not linear in the features.

    For query ``i``: documents ``x_ij ~ N(0, I_{m_d})`` (``n_i`` uniform on ``docs``);
    ``m_q`` distinct feature columns ``c`` drawn without replacement; query features
    ``gamma ~ N(0, I_{m_q})``; label ``y_ij = max(l, min(h, sum_k gamma_k x_ij,c_k))``,
    here rounded to the nearest integer grade; the features are ``x_ij`` followed by
    ``gamma`` (``m_d + m_q`` columns). The relevant direction changes from query to query
    through ``gamma``, so a linear ranker cannot fit it.
    """
    if not 1 <= n_query_features <= n_doc_features or n_queries < 1:
        raise ValueError("need n_queries >= 1 and 1 <= n_query_features <= n_doc_features")
    if not 1 <= docs[0] <= docs[1] or not labels[0] < labels[1]:
        raise ValueError("need 1 <= docs[0] <= docs[1] and labels[0] < labels[1]")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(docs[0], docs[1], endpoint=True, size=n_queries)
    mask = np.arange(docs[1])[None, :] < lengths[:, None]
    x = rng.normal(size=(n_queries, docs[1], n_doc_features))
    columns = np.stack(
        [rng.choice(n_doc_features, n_query_features, replace=False) for _ in range(n_queries)]
    )
    gamma = rng.normal(size=(n_queries, n_query_features))
    utility = np.einsum("bnk,bk->bn", np.take_along_axis(x, columns[:, None, :], axis=2), gamma)
    grades = np.rint(np.clip(utility, *labels))
    features = np.concatenate(
        [x, np.broadcast_to(gamma[:, None, :], (*mask.shape, n_query_features))], axis=2
    )
    qids = np.array([str(b + 1) for b in range(n_queries)], dtype=object)
    return LetorData(
        np.where(mask[:, :, None], features, 0.0),
        np.where(mask, grades, 0.0),
        lengths.astype(np.int64),
        qids,
    )


def sample_text() -> str:
    """The text of ``data/letor-sample.txt``: :data:`SAMPLE` data, the truth in a comment."""
    data, w_true = synthetic_letor(**SAMPLE)  # type: ignore[arg-type]
    truth = " ".join(f"{w:.6g}" for w in w_true)
    header = (
        "# synthetic LETOR sample: rankmodels.ltr.synthetic.sample_text()\n"
        f"# {data.lengths.shape[0]} queries, {int(data.lengths.sum())} documents, labels 0-2 "
        f"from a noisy linear utility with weights: {truth}\n"
    )
    return header + format_letor(data)
