"""IMPALA actor-critic networks (flax.linen): a torso, an optional LSTM core, policy-logit and value heads.

IMPALA (Espeholt et al. 2018, Fig. 3; notes §2.1) puts linear policy-logit and baseline heads on a
shared torso, optionally behind an LSTM core fed with the torso output, the clipped last reward and
the one-hot last action (released code ``Agent._torso``/``_head``). The torsos (``rlrepro.networks.torsos``) and the
LSTM core (``rlrepro.networks.lstm``) are shared with the other agents; the heads, the unroll over time and the
acting step are IMPALA's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.networks.config import ConvNetworkConfig
from rlrepro.networks.lstm import CoreState, ScannedLSTM
from rlrepro.networks.torsos import DeepTorso, MLPTorso, ShallowTorso
from rlrepro.training.actor_learner import sample_action


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
            self.core = ScannedLSTM(self.lstm_size)

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
