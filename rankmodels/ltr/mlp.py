"""Neural rankers: an :class:`~rankmodels.ltr.models.MLP` trained by Adam on mini-batches
of queries, with early stopping on validation NDCG@k.

Each epoch visits the training queries in a fresh random order, in mini-batches of
``batch_queries``; a step follows the gradient of the batch's
:class:`~rankmodels.ltr.train.TrainingObjective` (mean loss over the batch's queries plus
``l2 ||theta||^2``) with Adam (Kingma & Ba, algorithm 1):

    m <- b1 m + (1 - b1) g,   v <- b2 v + (1 - b2) g^2,
    theta <- theta - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).

After every epoch the mean NDCG@k on the validation queries is measured; the parameters
of the best epoch are kept and training stops after ``patience`` epochs without
improvement. Without validation data a random ``valid_fraction`` of the training queries
is held out for it. Everything random (initialisation, the held-out queries, the batch
order) comes from ``seed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np

from rankmodels.ltr.early_stopping import EarlyStopping
from rankmodels.ltr.letor import LetorData
from rankmodels.ltr.models import MLP, Ranker
from rankmodels.ltr.splits import holdout_split
from rankmodels.ltr.train import TrainingError, check_learnable, standardisation, training_objective

__all__ = ["adam_step", "fit_mlp_ranker"]


def adam_step(
    theta: np.ndarray,
    grad: np.ndarray,
    state: dict[str, np.ndarray | int],
    lr: float,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
) -> np.ndarray:
    """One Adam update (module docstring); ``state`` (``m``, ``v``, ``t``) is updated in
    place, starting from ``{}``."""
    t = int(state.get("t", 0)) + 1
    m = b1 * state.get("m", 0.0) + (1 - b1) * grad
    v = b2 * state.get("v", 0.0) + (1 - b2) * grad**2
    state.update(m=m, v=v, t=t)
    return theta - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)


def fit_mlp_ranker(
    data: LetorData,
    loss: str,
    *,
    valid: LetorData | None = None,
    hidden: tuple[int, ...] = (32,),
    options: Mapping[str, object] | None = None,
    l2: float = 1e-4,
    lr: float = 3e-3,
    epochs: int = 100,
    batch_queries: int = 16,
    patience: int = 10,
    valid_fraction: float = 0.2,
    k: int = 10,
    seed: int | np.random.Generator = 0,
    progress: Callable[[int], None] | None = None,
) -> Ranker:
    """Fit an MLP ranker (module docstring) with ``loss`` and its ``options``.

    ``progress(1)`` is called after every epoch, ``progress(rest)`` once when stopping
    early, so that the calls sum to ``epochs``.
    """
    if epochs < 1 or batch_queries < 1 or patience < 1:
        raise ValueError("epochs, batch_queries and patience must be >= 1")
    rng = np.random.default_rng(seed)
    if valid is None and data.lengths.shape[0] > 1 and valid_fraction > 0:
        fit_idx, valid_idx = holdout_split(data.lengths.shape[0], valid_fraction, rng)
        data, valid = data.subset(fit_idx), data.subset(valid_idx)
    check_learnable(data)
    model = MLP(tuple(hidden))
    mean, scale = standardisation(data)
    unit = Ranker(model, np.empty(0), mean, scale)
    objective = training_objective(
        data, loss, options=options, l2=l2, standardisation=unit, model=model
    )
    monitor = valid if valid is not None and valid.lengths.shape[0] else data
    theta = model.init(mean.shape[0], rng)
    stopper, state = EarlyStopping(patience, theta), {}
    n_queries = data.lengths.shape[0]
    for epoch in range(1, epochs + 1):
        for batch in np.array_split(rng.permutation(n_queries), -(-n_queries // batch_queries)):
            part = replace(
                objective,
                design=objective.design[batch],
                relevance=objective.relevance[batch],
                lengths=objective.lengths[batch],
            )
            value, grad = part(theta)
            if not np.isfinite(value):
                raise TrainingError(
                    f"the {loss} objective is not finite (epoch {epoch}, options "
                    f"{objective.options}); try a smaller lr, a larger smoothing or l2"
                )
            theta = adam_step(theta, grad, state, lr)
        if progress is not None:
            progress(1)
        if stopper.offer(theta, Ranker(model, theta, mean, scale).ndcg(monitor, k)):
            if progress is not None:
                progress(epochs - epoch)
            break
    return Ranker(model, stopper.best, mean, scale)
