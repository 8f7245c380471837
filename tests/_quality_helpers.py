"""Cycles of the signal model at fixed predicted TOAs, and posteriors from labels, for the
quality-check tests."""

from __future__ import annotations

import numpy as np

from rankmodels.tracking.signal_model import SignalModel

MODEL = SignalModel(sigma=5.0, p_detect=0.8, clutter_rate=1.5, window=1800.0)


def simulate_cycles(pred: np.ndarray, model: SignalModel, r: int, rng: np.random.Generator):
    """Cycles of the generative model (signal_model docstring) at fixed predicted TOAs
    ``pred (n, s)`` (NaN = inactive): ``toa (n, r)`` and the true labels (source, -1 clutter,
    -2 none)."""
    n, s = pred.shape
    max_clutter = 25
    detected = np.isfinite(pred) & (rng.random(pred.shape) < model.p_detect)
    arrival = np.where(detected, pred + rng.normal(0.0, model.sigma, pred.shape), np.inf)
    arrival[(arrival < 0) | (arrival > model.window)] = np.inf
    n_clutter = rng.poisson(model.clutter_rate, n)
    assert n_clutter.max() < max_clutter
    clutter = rng.uniform(0.0, model.window, (n, max_clutter))
    clutter[np.arange(max_clutter)[None, :] >= n_clutter[:, None]] = np.inf
    times = np.concatenate([arrival, clutter], axis=1)
    labels = np.concatenate([np.tile(np.arange(s), (n, 1)), np.full((n, max_clutter), -1)], 1)
    order = np.argsort(times, axis=1)[:, :r]
    toa = np.take_along_axis(times, order, 1)
    lab = np.take_along_axis(labels, order, 1)
    lab[~np.isfinite(toa)] = -2
    toa[~np.isfinite(toa)] = np.nan
    return toa, lab


def one_hot(labels: np.ndarray, s: int) -> np.ndarray:
    """``(n, r, s + 1)`` posterior putting all mass on ``labels`` (NaN rows where -2)."""
    post = np.zeros((*labels.shape, s + 1))
    idx = np.where(labels == -1, s, np.maximum(labels, 0))
    np.put_along_axis(post, idx[..., None], 1.0, axis=2)
    post[labels == -2] = np.nan
    return post
