"""Value-only networks (flax.linen) of the prediction tasks: FRODO's and TD(lambda)'s v(s) on the random walk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from rlrepro.networks.torsos import MLPTorso


class TabularValue(nn.Module):
    """v(s) = w . one_hot(s), w initialised to 0: a table of values for one-hot observations."""

    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, observations: jax.Array) -> jax.Array:
        x = observations.reshape(observations.shape[0], -1).astype(self.param_dtype)
        dense = nn.Dense(1, use_bias=False, kernel_init=nn.initializers.zeros, param_dtype=self.param_dtype, name="value")
        return dense(x)[:, 0]


class MLPValue(nn.Module):
    """ReLU MLP then a linear value head."""

    hidden_sizes: Sequence[int]

    @nn.compact
    def __call__(self, observations: jax.Array) -> jax.Array:
        return nn.Dense(1, name="value")(MLPTorso(tuple(self.hidden_sizes))(observations))[:, 0]


def fold_time(fn, observations: jax.Array):  # noqa: ANN001, ANN201 - a tiny helper over any pytree output
    """Apply ``fn`` (on [N, ...]) to [T, B, ...] observations by folding time into batch."""
    leading = observations.shape[:2]
    out = fn(observations.reshape((-1, *observations.shape[2:])))
    return jax.tree.map(lambda x: x.reshape((*leading, *x.shape[1:])), out)
