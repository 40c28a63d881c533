"""Torsos: observations -> features (IMPALA Fig. 3, notes §2.1; released code ``Agent._torso``).

- ``MLPTorso``: toy vector/grid observations.
- ``ShallowTorso``: the A3C 2-conv net (16 8x8/4, 32 4x4/2, VALID) or the Nature-DQN 3-conv net
  (32 8x8/4, 64 4x4/2, 64 3x3/1, VALID), then FC + ReLU (notes §5 ambiguity 1).
- ``DeepTorso``: 3 residual stages (conv 3x3 -> max-pool 3x3/2 SAME -> 2 residual blocks), ReLU, FC 256, ReLU.

Image layout: the conv torsos take **channels-first** uint8 observations ``[N, C, H, W]`` (Atari:
``[N, 4, 84, 84]``, the layout ale-py's vector environment gives), scale them by 1/255 and transpose
them once to channels-last (NHWC, flax's convolution layout) inside the torso (``scaled_nhwc``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

SHALLOW_LAYERS = {
    # (features, kernel, stride) per conv layer, VALID padding (notes §2.1: SAME would not give 1.2M).
    "a3c_2conv": ((16, 8, 4), (32, 4, 2)),
    "nature_3conv": ((32, 8, 4), (64, 4, 2), (64, 3, 1)),
}



class MLPTorso(nn.Module):
    """Flatten each observation, then Dense + ReLU layers of ``hidden_sizes``."""

    hidden_sizes: Sequence[int]

    @nn.compact
    def __call__(self, observations: jax.Array) -> jax.Array:
        x = observations.reshape(observations.shape[0], -1).astype(jnp.float32)
        for size in self.hidden_sizes:
            x = nn.relu(nn.Dense(size)(x))
        return x


def scaled_nhwc(observations: jax.Array) -> jax.Array:
    """uint8 ``[N, C, H, W]`` -> float32 ``[N, H, W, C]`` in [0, 1]: the one layout conversion."""
    return jnp.transpose(observations, (0, 2, 3, 1)).astype(jnp.float32) / 255.0


class ShallowTorso(nn.Module):
    """A3C 2-conv (default) or Nature-DQN 3-conv net on ``[N, C, H, W]`` uint8, then FC ``fc_size`` + ReLU."""

    layers: Literal["a3c_2conv", "nature_3conv"] = "a3c_2conv"
    fc_size: int = 256

    @nn.compact
    def __call__(self, observations: jax.Array) -> jax.Array:
        x = scaled_nhwc(observations)
        for features, kernel, stride in SHALLOW_LAYERS[self.layers]:
            x = nn.relu(nn.Conv(features, (kernel, kernel), strides=(stride, stride), padding="VALID")(x))
        return nn.relu(nn.Dense(self.fc_size)(x.reshape(x.shape[0], -1)))


class ResidualBlock(nn.Module):
    """``x + conv(relu(conv(relu(x))))`` with 3x3 SAME convolutions (released code ``Agent._torso``)."""

    features: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        y = nn.Conv(self.features, (3, 3), padding="SAME")(nn.relu(x))
        y = nn.Conv(self.features, (3, 3), padding="SAME")(nn.relu(y))
        return x + y


class DeepTorso(nn.Module):
    """IMPALA ResNet: per stage conv 3x3 -> max-pool 3x3/2 SAME -> ``blocks`` residual blocks; ReLU, FC, ReLU.

    15 convolutions with the default 3 stages of 2 blocks; 84x84 -> 42 -> 21 -> 11, so 11*11*32 = 3872
    features enter the FC layer (notes §2.1).
    """

    channels: Sequence[int] = (16, 32, 32)
    blocks: int = 2
    fc_size: int = 256

    @nn.compact
    def __call__(self, observations: jax.Array) -> jax.Array:
        x = scaled_nhwc(observations)
        for features in self.channels:
            x = nn.Conv(features, (3, 3), padding="SAME")(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            for _ in range(self.blocks):
                x = ResidualBlock(features)(x)
        x = nn.relu(x).reshape(x.shape[0], -1)
        return nn.relu(nn.Dense(self.fc_size)(x))
