"""Feed-forward actor-critic networks for IMPALA (flax.linen): a swappable torso, then policy and value heads.

IMPALA (Espeholt et al. 2018, Fig. 3) puts linear policy-logit and baseline heads on a shared torso.
The toy environments use an MLP torso; a conv torso (shallow / deep ResNet) is any ``nn.Module``
mapping ``[N, *observation_shape]`` to ``[N, features]`` and can replace ``MLPTorso``.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from rlrepro.agents.impala.config import ImpalaConfig


class MLPTorso(nn.Module):
    """Flatten each observation, then Dense + ReLU layers of ``hidden_sizes``."""

    hidden_sizes: Sequence[int]

    @nn.compact
    def __call__(self, observations: jax.Array) -> jax.Array:
        x = observations.reshape(observations.shape[0], -1).astype(jnp.float32)
        for size in self.hidden_sizes:
            x = nn.relu(nn.Dense(size)(x))
        return x


class ActorCritic(nn.Module):
    """Torso, then a linear policy-logit head and a linear scalar value head.

    Call on a batch ``[N, *observation_shape]``; returns ``(logits [N, num_actions], values [N])``.
    Callers with time and batch axes fold them into N (IMPALA §3.1: "fold time into batch").
    """

    torso: nn.Module
    num_actions: int

    @nn.compact
    def __call__(self, observations: jax.Array) -> tuple[jax.Array, jax.Array]:
        features = self.torso(observations)
        logits = nn.Dense(self.num_actions, name="policy")(features)
        values = nn.Dense(1, name="value")(features)[:, 0]
        return logits, values


def make_network(config: ImpalaConfig, num_actions: int) -> ActorCritic:
    """The actor-critic the config describes (currently the MLP torso of ``config.hidden_sizes``)."""
    return ActorCritic(torso=MLPTorso(hidden_sizes=tuple(config.hidden_sizes)), num_actions=num_actions)


def apply_time_major(network: ActorCritic, params: object, observations: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Apply ``network`` to ``[T, B, *obs]`` observations by folding time into batch.

    Returns:
      ``(logits [T, B, A], values [T, B])``.
    """
    leading = observations.shape[:2]
    logits, values = network.apply(params, observations.reshape((-1, *observations.shape[2:])))
    return logits.reshape((*leading, -1)), values.reshape(leading)
