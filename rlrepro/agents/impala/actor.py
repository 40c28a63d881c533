"""The synchronous IMPALA actor: B vmapped pure-JAX environments unrolled T steps with ``lax.scan``.

IMPALA actors copy the learner's parameters, run n steps and send the trajectory with the behaviour
logits mu(.|x_t) (§3, notes §1.6). Here one actor steps all B environments in lock-step with the
(possibly lagged) parameters it is given; the environments auto-reset in the same step
(``rlrepro.environments.base``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlrepro.agents.impala.learner import Batch, Params
from rlrepro.agents.impala.networks import ActorCritic
from rlrepro.environments.base import JaxEnv


class ActorState(NamedTuple):
    """What carries over between unrolls.

    Attributes:
      env_state: the B environment states (leading axis B).
      observation: [B, *obs], the observation to act on next (first observation of the next unroll).
      episode_return: [B] float32, undiscounted raw return of each running episode so far.
    """

    env_state: Any
    observation: jax.Array
    episode_return: jax.Array


class EpisodeStats(NamedTuple):
    """Per-step episode bookkeeping of one unroll, [T, B] each.

    Attributes:
      ended: whether an episode (terminated or truncated) ended at the transition t -> t + 1.
      returns: the undiscounted raw return of the episode that ended there, 0 where none ended.
    """

    ended: jax.Array
    returns: jax.Array


class _Step(NamedTuple):
    """Per-step outputs of the scan (stacked to [T, B, ...])."""

    observation: jax.Array
    action: jax.Array
    reward: jax.Array
    done: jax.Array
    behaviour_logits: jax.Array
    episode_return: jax.Array


def init_actor(key: jax.Array, env: JaxEnv, batch_size: int) -> ActorState:
    """Reset B environments with independent keys."""
    env_state, timestep = jax.vmap(env.reset)(jax.random.split(key, batch_size))
    return ActorState(
        env_state=env_state,
        observation=timestep.observation,
        episode_return=jnp.zeros((batch_size,), jnp.float32),
    )


def _act_and_step(
    key: jax.Array, params: Params, state: ActorState, env: JaxEnv, network: ActorCritic
) -> tuple[ActorState, _Step]:
    """Sample a_t ~ pi(.|x_t) in every environment and step them all once."""
    action_key, env_key = jax.random.split(key)
    logits, _ = network.apply(params, state.observation)
    action = jax.random.categorical(action_key, logits).astype(jnp.int32)
    env_keys = jax.random.split(env_key, action.shape[0])
    env_state, timestep = jax.vmap(env.step)(env_keys, state.env_state, action)
    reward = timestep.reward.astype(jnp.float32)
    done = jnp.logical_or(timestep.terminated, timestep.truncated)
    episode_return = state.episode_return + reward
    step = _Step(state.observation, action, reward, done, logits, episode_return)
    next_state = ActorState(env_state, timestep.observation, jnp.where(done, 0.0, episode_return))
    return next_state, step


def unroll(
    key: jax.Array,
    params: Params,
    state: ActorState,
    *,
    env: JaxEnv,
    network: ActorCritic,
    unroll_length: int,
) -> tuple[ActorState, Batch, EpisodeStats]:
    """Run T steps in the B environments with ``params``.

    Returns:
      the actor state after the unroll, the time-major learner ``Batch`` (observations [T + 1, B, ...],
      starting with ``state.observation``), and the per-step ``EpisodeStats``.
    """

    def scan_step(carry: ActorState, step_key: jax.Array) -> tuple[ActorState, _Step]:
        return _act_and_step(step_key, params, carry, env, network)

    final_state, steps = jax.lax.scan(scan_step, state, jax.random.split(key, unroll_length))
    observations = jnp.concatenate([steps.observation, final_state.observation[None]], axis=0)
    batch = Batch(
        observations=observations,
        actions=steps.action,
        rewards=steps.reward,
        dones=steps.done,
        behaviour_logits=steps.behaviour_logits,
    )
    stats = EpisodeStats(ended=steps.done, returns=jnp.where(steps.done, steps.episode_return, 0.0))
    return final_state, batch, stats
