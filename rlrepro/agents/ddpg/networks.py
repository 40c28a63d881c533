"""DDPG's networks (App. A): a policy MLP with tanh output in [-1, 1]^A and a critic MLP Q(s, a), 2x128 Softsign."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from rlrepro.networks.softsign import output_init, softsign_torso



class PolicyNetwork(nn.Module):
    hidden_sizes: tuple[int, ...]
    action_dim: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return jnp.tanh(nn.Dense(self.action_dim, kernel_init=output_init())(softsign_torso(obs, self.hidden_sizes)))


class CriticNetwork(nn.Module):
    hidden_sizes: tuple[int, ...]

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = softsign_torso(jnp.concatenate([obs, action], axis=-1), self.hidden_sizes)
        return nn.Dense(1, kernel_init=output_init())(x)[..., 0]
