"""Networks of FRODO (flax.linen): the reverse-time LSTM meta-network and the agents' networks.

The meta-network g_eta (§3.2, App. A) reads a trajectory's per-step inputs in reverse time and outputs one
scalar per step (the target G_t, or a per-step loss in the loss-parameterised ablation). The agent is a
value network (prediction: ``rlrepro.networks.value``) or an actor-critic whose torso embedding can be fed to g_eta (listing C.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp



class MetaNetwork(nn.Module):
    """LSTM over time in reverse order, then a linear scalar head: [T, B, F] -> [T, B].

    The LSTM starts from zeros for every trajectory and does not reset at episode ends inside it (the
    discount input tells it where they are; not specified by the paper, notes §1.4).
    """

    hidden_size: int
    param_dtype: Any = jnp.float32
    unroll: int | None = None

    @nn.compact
    def __call__(self, inputs: jax.Array) -> jax.Array:
        cell = nn.OptimizedLSTMCell(self.hidden_size, param_dtype=self.param_dtype)
        # Fully unrolled over the (short) trajectory by default: a scan under second-order autodiff compiles slowly on CPU.
        unroll = inputs.shape[0] if self.unroll is None else min(self.unroll, inputs.shape[0])
        rnn = nn.RNN(cell, time_major=True, reverse=True, keep_order=True, unroll=unroll)
        hidden = rnn(inputs.astype(self.param_dtype))
        return nn.Dense(1, param_dtype=self.param_dtype, name="head")(hidden)[..., 0]


class TwoConvTorso(nn.Module):
    """FRODO's Atari torso (Table 1): conv 32 k4 s4, conv 64 k4 s4 (VALID, ReLU), flatten, optional ReLU FC.

    84x84 inputs give 21x21x32 then 5x5x64 (notes §2.3). Observations are channels-first [N, C, H, W] (Atari:
    uint8 [N, 4, 84, 84], ale-py's layout, as IMPALA's torsos take them), transposed to NHWC here; uint8 is
    scaled to [0, 1].
    """

    channels: Sequence[int] = (32, 64)
    kernel_sizes: Sequence[int] = (4, 4)
    strides: Sequence[int] = (4, 4)
    fc_size: int | None = None

    @nn.compact
    def __call__(self, observations: jax.Array) -> jax.Array:
        x = jnp.transpose(observations, (0, 2, 3, 1)).astype(jnp.float32)
        if observations.dtype == jnp.uint8:
            x = x / 255.0
        for channels, kernel, stride in zip(self.channels, self.kernel_sizes, self.strides):
            x = nn.relu(nn.Conv(channels, (kernel, kernel), (stride, stride), padding="VALID")(x))
        x = x.reshape(x.shape[0], -1)
        if self.fc_size is not None:
            x = nn.relu(nn.Dense(self.fc_size)(x))
        return x


class ActorCriticWithTorso(nn.Module):
    """Torso, then linear policy-logit and value heads; ``__call__`` returns (logits, values) like IMPALA's.

    ``embed`` also returns the torso features (the meta-network's ``torso`` input, listing C.4).
    """

    torso: nn.Module
    num_actions: int

    def setup(self) -> None:
        self.policy = nn.Dense(self.num_actions)
        self.value = nn.Dense(1)

    def __call__(self, observations: jax.Array) -> tuple[jax.Array, jax.Array]:
        logits, values, _ = self.embed(observations)
        return logits, values

    def embed(self, observations: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        features = self.torso(observations)
        return self.policy(features), self.value(features)[:, 0], features
