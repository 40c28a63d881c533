"""ReF-ER's hidden layers (App. A): Softsign MLPs with Glorot-uniform weights, and the near-zero output layer,
shared by V-RACER, DDPG, NAF and ACER."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


def softplus_inverse(y: float) -> float:
    return float(np.log(np.expm1(y)))


def output_init(scale: float = 0.1):
    """App. A: output weights U[-0.1/sqrt(f_in), 0.1/sqrt(f_in)] (near-zero initial V and mean)."""

    def init(key, shape, dtype=jnp.float32):
        bound = scale / np.sqrt(shape[0])
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return init


def softsign_torso(x: jax.Array, hidden_sizes: tuple[int, ...]) -> jax.Array:
    """App. A's hidden layers, shared by V-RACER, DDPG, NAF and ACER: Softsign units, Glorot-uniform weights (the
    code; the printed formula is a typo). Called inside a module's ``nn.compact`` method, so its Dense layers are
    that module's (``Dense_0``, ``Dense_1``, ...)."""
    for width in hidden_sizes:
        x = nn.soft_sign(nn.Dense(width, kernel_init=nn.initializers.glorot_uniform())(x))
    return x
