"""Optional JAX bindings: jax.grad through the numpy losses equals their exact gradients."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from rankmodels.ltr.batching import pad_lists  # noqa: E402
from rankmodels.ltr.jax_ops import jax_loss  # noqa: E402
from rankmodels.ltr.losses import LOSSES  # noqa: E402


@pytest.mark.parametrize(
    ("name", "options"),
    [("softrank", {"sigma": 0.7}), ("sinkprop", {"sigma": 0.8}), ("listmle", {})],
)
def test_jax_grad_equals_the_numpy_gradient(rng, name, options):
    S, L = pad_lists([rng.normal(size=m) for m in (5, 2, 4)])
    R, _ = pad_lists([rng.integers(0, 3, size=m).astype(float) for m in (5, 2, 4)])
    R[:, 0] = 2.0
    ref = LOSSES[name](S, R, L, **options)
    loss = jax_loss(name, **options)
    weights = jnp.array([0.5, 1.0, 2.0], dtype=jnp.float32)

    def objective(s):
        return jnp.sum(weights * loss(s, jnp.asarray(R, jnp.float32), jnp.asarray(L)))

    value = jax.jit(objective)(jnp.asarray(S, jnp.float32))
    grad = jax.jit(jax.grad(objective))(jnp.asarray(S, jnp.float32))
    np.testing.assert_allclose(value, np.asarray(weights) @ ref.value, rtol=1e-5)
    np.testing.assert_allclose(grad, np.asarray(weights)[:, None] * ref.grad, atol=1e-5)


def test_chain_rule_through_a_linear_model(rng):
    X = rng.normal(size=(3, 4, 2))
    R = rng.integers(0, 3, size=(3, 4)).astype(float)
    L = np.array([4, 4, 3])
    loss = jax_loss("listnet")

    def objective(w):
        return jnp.mean(loss(jnp.asarray(X, jnp.float32) @ w, jnp.asarray(R, jnp.float32), L))

    w = jnp.array([0.3, -0.2], dtype=jnp.float32)
    ref = LOSSES["listnet"](X @ np.asarray(w, float), R, L)
    expected = np.einsum("bnf,bn->f", X, ref.grad) / 3
    np.testing.assert_allclose(jax.grad(objective)(w), expected, atol=1e-5)
    with pytest.raises(ValueError, match="unknown loss 'hinge'; expected one of: sinkprop"):
        jax_loss("hinge")
    with pytest.raises(ValueError, match="loss softrank has no option 'tau'; its options: sigma"):
        jax_loss("softrank", tau=1.0)
    with pytest.raises(ValueError, match="sigma must be positive"):
        jax_loss("softrank", sigma=-1.0)
