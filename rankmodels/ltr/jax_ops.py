"""Optional JAX bindings: the learning-to-rank losses as differentiable JAX functions.

Needs the ``jax`` extra (``pip install -e '.[jax]'``). The loss still runs in numpy/numba
through :func:`jax.pure_callback`; :func:`jax.custom_vjp` hands JAX the exact gradient that
the loss computes together with its value, so a loss can sit inside a jitted JAX model and
be differentiated with :func:`jax.grad` (reverse mode only; relevance and lengths are not
differentiated). Values and gradients are computed in float64 and cast to the dtype of the
scores.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from rankmodels.ltr.losses import LOSSES

__all__ = ["jax_loss"]


def jax_loss(name: str, **options: object) -> Callable[..., jax.Array]:
    """``f(scores, relevance, lengths) -> (B,)`` per-query losses, differentiable in
    ``scores``; ``scores`` and ``relevance`` are ``(B, n_max)``, ``lengths`` ``(B,)`` ints.

    ``name`` is a loss of the registry :data:`rankmodels.ltr.losses.LOSSES`, ``options``
    its keyword options (e.g. ``jax_loss("softrank", sigma=0.5)``), checked here against
    the registry so that a bad one fails before tracing.
    """
    spec = LOSSES[name]
    options = spec.validate(options)
    fn = spec.function

    def host(scores, relevance, lengths):
        res = fn(
            np.asarray(scores, float),
            np.asarray(relevance, float),
            np.asarray(lengths, np.int64),
            **options,
        )
        dtype = np.asarray(scores).dtype
        return np.asarray(res.value, dtype), np.asarray(res.grad, dtype)

    def both(scores, relevance, lengths):
        if scores.ndim != 2 or relevance.shape != scores.shape or lengths.shape != scores.shape[:1]:
            raise ValueError("expected scores and relevance (B, n_max) and lengths (B,)")
        out = (
            jax.ShapeDtypeStruct(scores.shape[:1], scores.dtype),
            jax.ShapeDtypeStruct(scores.shape, scores.dtype),
        )
        return jax.pure_callback(host, out, scores, relevance, lengths)

    @jax.custom_vjp
    def loss(scores, relevance, lengths):
        return both(scores, relevance, lengths)[0]

    def forward(scores, relevance, lengths):
        value, grad = both(scores, relevance, lengths)
        return value, (grad, relevance)

    def backward(saved, cotangent):
        grad, relevance = saved
        return cotangent[:, None] * grad, jnp.zeros_like(relevance), None

    loss.defvjp(forward, backward)
    return loss
