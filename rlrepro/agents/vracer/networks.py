"""V-RACER's network (App. A): one Softsign MLP s -> (V(s), m(s)) and a state-independent diagonal std."""

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


class VRacerNetwork(nn.Module):
    """Returns (V [..], mean [.., A], std [A]); hidden layers Glorot-uniform (the code; the printed formula is a typo)."""

    hidden_sizes: tuple[int, ...]
    action_dim: int
    init_std: float

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        x = softsign_torso(obs, self.hidden_sizes)  # first: Flax names layers in the order they are built
        out = nn.Dense(1 + self.action_dim, kernel_init=output_init())(x)
        # Sigma is shared by all states: a parameter vector mapped to R+ by Softplus (App. A).
        raw_std = self.param("raw_std", nn.initializers.constant(softplus_inverse(self.init_std)), (self.action_dim,))
        return out[..., 0], out[..., 1:], jax.nn.softplus(raw_std)
