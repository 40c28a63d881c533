"""ACER's three networks (ReF-ER App. A: value, advantage and policy, each an MLP with 2 layers of 128 units; the
common MLP of App. A: Softsign, Glorot-uniform hidden layers, near-zero output layer U[-0.1/sqrt(f_in), ..]).
The policy is a Gaussian whose mean is the network's output and whose diagonal std is a state-independent
parameter vector mapped to R+ by Softplus (as V-RACER's, and smarties' ACER: a parameter layer)."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from rlrepro.networks.softsign import output_init, softplus_inverse, softsign_torso



class PolicyNetwork(nn.Module):
    """s -> (mean [.., A], std [A])."""

    hidden_sizes: tuple[int, ...]
    action_dim: int
    init_std: float

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        mean = nn.Dense(self.action_dim, kernel_init=output_init())(softsign_torso(obs, self.hidden_sizes))
        raw_std = self.param("raw_std", nn.initializers.constant(softplus_inverse(self.init_std)), (self.action_dim,))
        return mean, jax.nn.softplus(raw_std)


class ValueNetwork(nn.Module):
    """s -> V(s)."""

    hidden_sizes: tuple[int, ...]

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return nn.Dense(1, kernel_init=output_init())(softsign_torso(obs, self.hidden_sizes))[..., 0]


class AdvantageNetwork(nn.Module):
    """(s, a) -> A(s, a): the action is an input beside the state (ACER §5.1; smarties' 'added input')."""

    hidden_sizes: tuple[int, ...]

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        return nn.Dense(1, kernel_init=output_init())(softsign_torso(x, self.hidden_sizes))[..., 0]
