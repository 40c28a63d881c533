"""PPO's networks (ReF-ER App. A: policy and value, each a 2x64 MLP; PPO §6.1: tanh, a Gaussian policy whose
log std is a state-independent parameter vector)."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


def _torso(x: jax.Array, hidden_sizes: tuple[int, ...]) -> jax.Array:
    # Orthogonal init with gain sqrt(2) (openai/baselines' PPO; neither paper says).
    for width in hidden_sizes:
        x = nn.tanh(nn.Dense(width, kernel_init=nn.initializers.orthogonal(np.sqrt(2.0)))(x))
    return x


class PolicyNetwork(nn.Module):
    """s -> (mean [.., A], std [A]); the mean head starts near zero (orthogonal, gain 0.01: openai/baselines)."""

    hidden_sizes: tuple[int, ...]
    action_dim: int
    init_log_std: float

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        mean = nn.Dense(self.action_dim, kernel_init=nn.initializers.orthogonal(0.01))(_torso(obs, self.hidden_sizes))
        log_std = self.param("log_std", nn.initializers.constant(self.init_log_std), (self.action_dim,))
        return mean, jnp.exp(log_std)


class ValueNetwork(nn.Module):
    """s -> V(s)."""

    hidden_sizes: tuple[int, ...]

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))(_torso(obs, self.hidden_sizes))[..., 0]
