"""The LSTM core: an ``OptimizedLSTMCell`` scanned over time that zeroes its carry where an episode starts.

Core state: a feed-forward network's core state is ``()``; an LSTM core's is ``(c, h)``, each
``[B, lstm_size]`` float32. The state passed with an observation is the state *before* that
observation is processed, already zeroed if the observation starts a new episode.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

CoreState = Any  # () for feed-forward networks, (c, h) for an LSTM core.


class _ResetLSTMStep(nn.Module):
    """One LSTM step that first zeroes the carry of the streams where ``reset`` is set."""

    size: int

    @nn.compact
    def __call__(self, carry: CoreState, inputs: tuple[jax.Array, jax.Array]) -> tuple[CoreState, jax.Array]:
        x, reset = inputs
        carry = jax.tree.map(lambda c: jnp.where(reset[:, None], 0.0, c), carry)
        return nn.OptimizedLSTMCell(self.size, name="cell")(carry, x)


ScannedLSTM = nn.scan(
    _ResetLSTMStep, variable_broadcast="params", split_rngs={"params": False}, in_axes=0, out_axes=0
)


def reset_core_state(core_state: CoreState, done: ArrayLike) -> CoreState:
    """Zero the core state of the streams where ``done`` [B] is set (an episode just ended)."""
    done = jnp.asarray(done, bool)
    return jax.tree.map(lambda c: jnp.where(done.reshape((-1,) + (1,) * (c.ndim - 1)), 0.0, c), core_state)
