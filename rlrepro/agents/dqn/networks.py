"""Q-networks (flax.linen): an MLP over flattened observations (App. B: 256-256 ReLU)."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class QNetwork(nn.Module):
    """Flatten, ReLU hidden layers, one linear output per action (Sonnet ``snt.nets.MLP`` in the released code)."""

    num_actions: int
    hidden_sizes: Sequence[int] = (256, 256)

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = jnp.reshape(obs, (obs.shape[0], -1)).astype(jnp.float32)
        for width in self.hidden_sizes:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(self.num_actions)(x)
