"""Q-networks (flax.linen): an MLP over flattened observations (App. B: 256-256 ReLU), and the Atari conv net."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from rlrepro.networks.config import ConvNetworkConfig
from rlrepro.networks.torsos import DeepTorso, ShallowTorso


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


class ConvQNetwork(nn.Module):
    """Atari Q-network: a conv torso on uint8 ``[N, C, H, W]`` frames (scaled by 1/255 inside), then a linear
    output per action. ``impala_shallow`` with ``a3c_2conv`` is the DQN net of Mnih et al. (2013): 16 8x8/4 and
    32 4x4/2 convolutions, FC 256 (Evolving RL App. B: "same as DQN (Mnih et al. 2013)")."""

    num_actions: int
    conv: ConvNetworkConfig

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        if self.conv.kind == "impala_deep":
            torso = DeepTorso(channels=tuple(self.conv.channels), fc_size=self.conv.fc_size)
        else:
            torso = ShallowTorso(layers=self.conv.shallow_torso, fc_size=self.conv.fc_size)
        return nn.Dense(self.num_actions)(torso(obs))


def make_q_network(num_actions: int, hidden_sizes: Sequence[int], conv: ConvNetworkConfig | None) -> nn.Module:
    """The conv Q-network when ``conv`` is given (Atari), else the MLP."""
    if conv is not None:
        return ConvQNetwork(num_actions=num_actions, conv=conv)
    return QNetwork(num_actions=num_actions, hidden_sizes=tuple(hidden_sizes))
