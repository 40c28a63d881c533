"""The IMPALA+SR network (flax.linen): IMPALA's torso, optional LSTM core and heads, plus the SR MLPs c, g, b.

Paper Supplement §6.6: Chain torso FC128 + ReLU, LSTM 256, then "a 256-unit layer followed by a ReLU and two
separate linear layers to produce policy logits and a baseline"; c and b are 2x256 ReLU
MLPs with a scalar output, g is 256 -> 1 -> sigmoid. c reads the torso output (the space the memory holds);
g and b read the current state's torso output, or the LSTM output on Skiing (``current_repr``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from rlrepro.networks.lstm import ScannedLSTM
from rlrepro.networks.torsos import MLPTorso, scaled_nhwc
from rlrepro.agents.impala_sr.config import ImpalaSRConfig

CoreState = Any  # () or (c, h), each [B, lstm_size]


class ScalarMLP(nn.Module):
    """ReLU layers of ``hidden_sizes`` then a linear scalar output: ``[..., d] -> [...]``."""

    hidden_sizes: Sequence[int]

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for size in self.hidden_sizes:
            x = nn.relu(nn.Dense(size)(x))
        return nn.Dense(1)(x)[..., 0]


class SRConvTorso(nn.Module):
    """The paper's Atari ConvNet (Supplement §6.6): conv layers of ``channels`` (32, 64, 64), ``kernel_size`` 3,
    ``stride`` 2, ReLU, on channels-first uint8 frames ``[N, C, H, W]``; then FC ``fc_size`` + ReLU. Padding is
    not stated: SAME (84 -> 42 -> 21 -> 11). Its output is what the episodic memory stores."""

    channels: Sequence[int] = (32, 64, 64)
    kernel_size: int = 3
    stride: int = 2
    fc_size: int = 256

    @nn.compact
    def __call__(self, observations: jax.Array) -> jax.Array:
        x = scaled_nhwc(observations)
        kernel, stride = (self.kernel_size, self.kernel_size), (self.stride, self.stride)
        for features in self.channels:
            x = nn.relu(nn.Conv(features, kernel, strides=stride, padding="SAME")(x))
        return nn.relu(nn.Dense(self.fc_size)(x.reshape(x.shape[0], -1)))


class SROutputs(NamedTuple):
    """What ``SRActorCritic.unroll`` returns over ``[T, B]`` inputs."""

    logits: jax.Array  # [T, B, A]
    values: jax.Array  # [T, B]
    torso: jax.Array  # [T, B, d]: the representation written to memory and read by c
    core: jax.Array  # [T, B, h]: the LSTM output (the torso output when there is no LSTM)
    core_state: CoreState  # after the last step


class SRActorCritic(nn.Module):
    """Torso -> optional LSTM -> the policy network (``head_hidden`` ReLU layers shared by two linear heads:
    logits and value); c, g (sigmoid) and b MLPs beside them."""

    torso: nn.Module
    num_actions: int
    lstm_size: int | None
    c_hidden: Sequence[int]
    g_hidden: Sequence[int]
    b_hidden: Sequence[int]
    current_repr: str = "torso"
    head_hidden: Sequence[int] = (256,)

    def setup(self) -> None:
        self.head_layers = [nn.Dense(size) for size in self.head_hidden]
        self.policy = nn.Dense(self.num_actions)
        self.value = nn.Dense(1)
        if self.lstm_size is not None:
            self.core = ScannedLSTM(self.lstm_size)
        self.contribution_mlp = ScalarMLP(self.c_hidden)
        self.gate_mlp = ScalarMLP(self.g_hidden)
        self.bias_mlp = ScalarMLP(self.b_hidden)

    def unroll(self, observations: jax.Array, resets: jax.Array, core_state: CoreState) -> SROutputs:
        """Run over time-major ``[T, B, *obs]`` from ``core_state``, zeroing the core where ``resets`` [T, B]."""
        time, batch = observations.shape[:2]
        folded = observations.reshape((time * batch, *observations.shape[2:]))
        torso = self.torso(folded).reshape((time, batch, -1))
        core = torso
        if self.lstm_size is not None:
            core_state, core = self.core(core_state, (torso, resets))
        hidden = core
        for layer in self.head_layers:
            hidden = nn.relu(layer(hidden))
        return SROutputs(self.policy(hidden), self.value(hidden)[..., 0], torso, core, core_state)

    def embed(self, observations: jax.Array) -> jax.Array:
        """Torso output of ``[N, *obs]`` observations (what the memory stores): ``[N, d]``."""
        return self.torso(observations)

    def contribution(self, representation: jax.Array) -> jax.Array:
        """c(s) of eq. 1 on torso representations ``[..., d] -> [...]``."""
        return self.contribution_mlp(representation)

    def gate(self, representation: jax.Array) -> jax.Array:
        """g(s) in [0, 1]: the gate MLP followed by a sigmoid."""
        return jax.nn.sigmoid(self.gate_mlp(representation))

    def bias(self, representation: jax.Array) -> jax.Array:
        """b(s), the current state's own contribution to the reward."""
        return self.bias_mlp(representation)

    def init_all(self, observations: jax.Array, resets: jax.Array, core_state: CoreState) -> SROutputs:
        """Touch every module once (parameter initialisation)."""
        out = self.unroll(observations, resets, core_state)
        current = current_representation(out, self.current_repr)
        self.gate(current), self.bias(current), self.contribution(out.torso)
        return out


def current_representation(out: SROutputs, current_repr: str) -> jax.Array:
    """The current state's representation for g and b: the torso output or the core (LSTM) output."""
    return out.core if current_repr == "core" else out.torso


def make_sr_network(config: ImpalaSRConfig, num_actions: int) -> SRActorCritic:
    """The network ``config`` describes: the Atari ConvNet of ``config.conv``, else the MLP of ``impala.hidden_sizes``."""
    conv = config.conv
    torso = (
        MLPTorso(hidden_sizes=tuple(config.impala.hidden_sizes))
        if conv is None
        else SRConvTorso(channels=tuple(conv.channels), kernel_size=conv.kernel_size, stride=conv.stride, fc_size=conv.fc_size)
    )
    return SRActorCritic(
        torso=torso,
        num_actions=num_actions,
        lstm_size=config.lstm_size,
        c_hidden=tuple(config.sr.c_hidden),
        g_hidden=tuple(config.sr.g_hidden),
        b_hidden=tuple(config.sr.b_hidden),
        current_repr=config.sr.current_repr,
        head_hidden=tuple(config.head_hidden),
    )


def initial_core_state(network: SRActorCritic, batch_size: int) -> CoreState:
    """Zero core state: ``()`` or ``(c, h)`` of ``[B, lstm_size]``."""
    if network.lstm_size is None:
        return ()
    zeros = jnp.zeros((batch_size, network.lstm_size), jnp.float32)
    return (zeros, zeros)


def init_sr_params(network: SRActorCritic, key: jax.Array, observation_shape: tuple[int, ...]) -> Any:
    """Parameters of every part of ``network``."""
    return network.init(
        key,
        jnp.zeros((1, 1, *observation_shape), jnp.float32),
        jnp.zeros((1, 1), bool),
        initial_core_state(network, 1),
        method=SRActorCritic.init_all,
    )


def representation_dim(config: ImpalaSRConfig) -> int:
    """Width d of the stored representation (the torso's last layer)."""
    return int(config.impala.hidden_sizes[-1] if config.conv is None else config.conv.fc_size)
