"""IMPALA actor-critic networks (flax.linen): a torso, an optional LSTM core, policy-logit and value heads.

IMPALA (Espeholt et al. 2018, Fig. 3; notes §2.1) puts linear policy-logit and baseline heads on a
shared torso, optionally behind an LSTM core fed with the torso output, the clipped last reward and
the one-hot last action (released code ``Agent._torso``/``_head``). Torsos:
- ``MLPTorso``: toy vector/grid observations.
- ``ShallowTorso``: the A3C 2-conv net (16 8x8/4, 32 4x4/2, VALID) or the Nature-DQN 3-conv net
  (32 8x8/4, 64 4x4/2, 64 3x3/1, VALID), then FC + ReLU (notes §5 ambiguity 1).
- ``DeepTorso``: 3 residual stages (conv 3x3 -> max-pool 3x3/2 SAME -> 2 residual blocks), ReLU,
  FC 256, ReLU (released code ``Agent._torso``).

Image layout: the conv torsos take **channels-first** uint8 observations ``[N, C, H, W]`` (Atari:
``[N, 4, 84, 84]``, the layout ale-py's vector environment gives), scale them by 1/255 and transpose
them once to channels-last (NHWC, flax's convolution layout) inside the torso.

Core state: a feed-forward network's core state is ``()``; an LSTM core's is ``(c, h)``, each
``[B, lstm_size]`` float32. The state passed with an observation is the state *before* that
observation is processed, already zeroed if the observation starts a new episode.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from rlrepro.agents.impala.config import ConvNetworkConfig, ImpalaConfig
from rlrepro.training.actor_learner import sample_action

CoreState = Any  # () for feed-forward networks, (c, h) for an LSTM core.
_SHALLOW_LAYERS = {
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


def _scaled_nhwc(observations: jax.Array) -> jax.Array:
    """uint8 ``[N, C, H, W]`` -> float32 ``[N, H, W, C]`` in [0, 1]: the one layout conversion."""
    return jnp.transpose(observations, (0, 2, 3, 1)).astype(jnp.float32) / 255.0


class ShallowTorso(nn.Module):
    """A3C 2-conv (default) or Nature-DQN 3-conv net on ``[N, C, H, W]`` uint8, then FC ``fc_size`` + ReLU."""

    layers: Literal["a3c_2conv", "nature_3conv"] = "a3c_2conv"
    fc_size: int = 256

    @nn.compact
    def __call__(self, observations: jax.Array) -> jax.Array:
        x = _scaled_nhwc(observations)
        for features, kernel, stride in _SHALLOW_LAYERS[self.layers]:
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
        x = _scaled_nhwc(observations)
        for features in self.channels:
            x = nn.Conv(features, (3, 3), padding="SAME")(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            for _ in range(self.blocks):
                x = ResidualBlock(features)(x)
        x = nn.relu(x).reshape(x.shape[0], -1)
        return nn.relu(nn.Dense(self.fc_size)(x))


class _ResetLSTMStep(nn.Module):
    """One LSTM step that first zeroes the carry of the streams where ``reset`` is set."""

    size: int

    @nn.compact
    def __call__(self, carry: CoreState, inputs: tuple[jax.Array, jax.Array]) -> tuple[CoreState, jax.Array]:
        x, reset = inputs
        carry = jax.tree.map(lambda c: jnp.where(reset[:, None], 0.0, c), carry)
        return nn.OptimizedLSTMCell(self.size, name="cell")(carry, x)


_ScannedLSTM = nn.scan(
    _ResetLSTMStep, variable_broadcast="params", split_rngs={"params": False}, in_axes=0, out_axes=0
)


class ActorCritic(nn.Module):
    """Torso, optional extra inputs and LSTM core, then a linear policy-logit head and a linear value head.

    ``__call__(observations [N, *obs]) -> (logits [N, A], values [N])`` is the single-step call of a
    feed-forward network without extra inputs (the toy actor uses it). ``unroll`` runs any network
    over time-major ``[T, B, ...]`` inputs: the torso folds time into batch (IMPALA §3.1; no conv
    gradients inside ``scan``, STACK.md trap 12), only the LSTM core is scanned over time.

    Attributes:
      torso: maps ``[N, *obs]`` to ``[N, features]``.
      num_actions: A, the number of policy logits.
      lstm_size: width of the LSTM core; None: feed-forward.
      last_action_reward_inputs: concatenate ``clip(last_reward, -1, 1)`` and ``one_hot(last_action)``
        to the torso output before the core (released code; notes §5 ambiguity 4).
    """

    torso: nn.Module
    num_actions: int
    lstm_size: int | None = None
    last_action_reward_inputs: bool = False

    def setup(self) -> None:
        self.policy = nn.Dense(self.num_actions)
        self.value = nn.Dense(1)
        if self.lstm_size is not None:
            self.core = _ScannedLSTM(self.lstm_size)

    @property
    def is_feed_forward(self) -> bool:
        """True if outputs depend on the observation only (no core, no last action/reward inputs)."""
        return self.lstm_size is None and not self.last_action_reward_inputs

    def __call__(self, observations: jax.Array) -> tuple[jax.Array, jax.Array]:
        if not self.is_feed_forward:
            raise ValueError("this network has a core or extra inputs: call it with unroll (or policy_step)")
        features = self.torso(observations)
        return self.policy(features), self.value(features)[:, 0]

    def unroll(
        self,
        observations: jax.Array,
        last_actions: jax.Array,
        last_rewards: jax.Array,
        resets: jax.Array,
        core_state: CoreState,
    ) -> tuple[jax.Array, jax.Array, CoreState]:
        """Run the network over time-major inputs from ``core_state``.

        Args:
          observations: ``[T, B, *obs]``.
          last_actions: ``[T, B]`` int, the action that led to each observation (used only with
            ``last_action_reward_inputs``).
          last_rewards: ``[T, B]`` raw reward that led to each observation (clipped to [-1, 1] here).
          resets: ``[T, B]`` bool, zero the core state before processing step t (a new episode).
          core_state: the state before ``observations[0]``: ``()`` or ``(c, h)`` each ``[B, lstm_size]``.

        Returns:
          ``(logits [T, B, A], values [T, B], core state after the last step)``.
        """
        time, batch = observations.shape[:2]
        # Fold batch-major ([B, T] -> B*T): with B sharded over devices the merged axis stays
        # tiled per device, so XLA needs no resharding around the torso.
        folded = jnp.swapaxes(observations, 0, 1).reshape((batch * time, *observations.shape[2:]))
        features = jnp.swapaxes(self.torso(folded).reshape((batch, time, -1)), 0, 1)
        if self.last_action_reward_inputs:
            reward = jnp.clip(last_rewards.astype(jnp.float32), -1.0, 1.0)[..., None]
            action = jax.nn.one_hot(last_actions, self.num_actions, dtype=jnp.float32)
            features = jnp.concatenate([features, reward, action], axis=-1)
        if self.lstm_size is not None:
            core_state, features = self.core(core_state, (features, resets))
        return self.policy(features), self.value(features)[..., 0], core_state


def initial_core_state(network: ActorCritic, batch_size: int) -> CoreState:
    """Zero core state for ``batch_size`` streams: ``()`` or ``(c, h)`` of ``[B, lstm_size]`` zeros."""
    if network.lstm_size is None:
        return ()
    zeros = jnp.zeros((batch_size, network.lstm_size), jnp.float32)
    return (zeros, zeros)


def reset_core_state(core_state: CoreState, done: ArrayLike) -> CoreState:
    """Zero the core state of the streams where ``done`` [B] is set (an episode just ended)."""
    done = jnp.asarray(done, bool)
    return jax.tree.map(lambda c: jnp.where(done.reshape((-1,) + (1,) * (c.ndim - 1)), 0.0, c), core_state)


def make_torso(config: ImpalaConfig) -> nn.Module:
    """The torso ``config`` describes: the conv network of ``config.conv_network``, else the MLP."""
    conv: ConvNetworkConfig | None = config.conv_network
    if conv is None:
        return MLPTorso(hidden_sizes=tuple(config.hidden_sizes))
    if conv.kind == "impala_deep":
        return DeepTorso(channels=tuple(conv.channels), fc_size=conv.fc_size)
    return ShallowTorso(layers=conv.shallow_torso, fc_size=conv.fc_size)


def make_network(config: ImpalaConfig, num_actions: int) -> ActorCritic:
    """The actor-critic ``config`` describes: MLP torso (toy tasks) or IMPALA's conv nets with optional core."""
    conv = config.conv_network
    return ActorCritic(
        torso=make_torso(config),
        num_actions=num_actions,
        lstm_size=None if conv is None else conv.lstm_size,
        last_action_reward_inputs=False if conv is None else conv.last_action_reward_inputs,
    )


def init_params(network: ActorCritic, key: jax.Array, observation_shape: tuple[int, ...]) -> Any:
    """Parameters of ``network`` for observations of ``observation_shape`` (all heads and the core)."""
    zeros = jnp.zeros((1, 1), jnp.int32)
    return network.init(
        key,
        jnp.zeros((1, 1, *observation_shape), jnp.float32),
        zeros,
        zeros.astype(jnp.float32),
        zeros.astype(bool),
        initial_core_state(network, 1),
        method=ActorCritic.unroll,
    )


def apply_time_major(
    network: ActorCritic,
    params: Any,
    observations: jax.Array,
    last_actions: jax.Array | None = None,
    last_rewards: jax.Array | None = None,
    resets: jax.Array | None = None,
    core_state: CoreState = None,
) -> tuple[jax.Array, jax.Array]:
    """Apply ``network`` to ``[T, B, *obs]`` observations (``ActorCritic.unroll``; missing inputs are zeros).

    Returns:
      ``(logits [T, B, A], values [T, B])``.
    """
    leading = observations.shape[:2]
    last_actions = jnp.zeros(leading, jnp.int32) if last_actions is None else last_actions
    last_rewards = jnp.zeros(leading, jnp.float32) if last_rewards is None else last_rewards
    resets = jnp.zeros(leading, bool) if resets is None else resets
    core_state = initial_core_state(network, leading[1]) if core_state is None else core_state
    logits, values, _ = network.apply(
        params, observations, last_actions, last_rewards, resets, core_state, method=ActorCritic.unroll
    )
    return logits, values


def _policy_step(
    params: Any,
    observation: jax.Array,
    last_action: jax.Array,
    last_reward: jax.Array,
    core_state: CoreState,
    key: jax.Array,
    *,
    network: ActorCritic,
) -> tuple[jax.Array, jax.Array, CoreState, jax.Array]:
    """One acting step for B streams: sample ``a ~ pi(.|x)``; see ``make_policy_step``."""
    logits, _, core_state = network.apply(
        params,
        observation[None],
        jnp.asarray(last_action, jnp.int32)[None],
        jnp.asarray(last_reward, jnp.float32)[None],
        jnp.zeros((1, observation.shape[0]), bool),
        core_state,
        method=ActorCritic.unroll,
    )
    action, key = sample_action(key, logits[0])
    return action, logits[0], core_state, key


PolicyStep = Callable[
    [Any, ArrayLike, ArrayLike, ArrayLike, CoreState, jax.Array], tuple[jax.Array, jax.Array, CoreState, jax.Array]
]


def make_policy_step(network: ActorCritic) -> PolicyStep:
    """Jitted ``policy_step(params, observation, last_action, last_reward, core_state, key)``.

    For the host actor threads, B environments at once:
      observation ``[B, *obs]`` (Atari: uint8 ``[B, 4, 84, 84]``, channels first), last_action ``[B]``
      int, last_reward ``[B]`` raw, core_state before this observation (zero it with
      ``reset_core_state`` where the previous step ended an episode; ``initial_core_state`` to start).
    Returns ``(action [B] int32, logits [B, A] (the behaviour logits), new core state, next key)``: the step
    splits ``key`` itself (``rlrepro.training.actor_learner.sample_action``) and returns the key for the next step,
    so an acting step is one dispatch. Deterministic given ``key``. The core state to record as an unroll's
    ``Batch.initial_core_state`` is the one passed in with the unroll's first observation.
    """
    return jax.jit(functools.partial(_policy_step, network=network))
