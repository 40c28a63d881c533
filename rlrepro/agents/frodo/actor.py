"""Data collection for FRODO: B pure-JAX environments stepped in lock-step inside the jitted meta-update.

Control reuses IMPALA's synchronous actor (``rlrepro.agents.impala.actor.unroll``): the agent acts on-policy
with the parameters of the current inner step. Prediction (the random walk) has no policy: the environment
moves by itself. The Monte Carlo outer loss (Catch, §4) needs complete episodes: ``fresh_episodes`` resets
B environments and runs them for the episode length.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlrepro.agents.frodo.learner import Collect, Params, Trajectory
from rlrepro.agents.impala.actor import ActorState, EpisodeStats, init_actor, unroll
from rlrepro.agents.impala.learner import Batch
from rlrepro.environments.base import JaxEnv


class PredictionStats(NamedTuple):
    """A prediction trajectory's episode bookkeeping and, at its end, the true values [B, N] and the phase [B].

    ``ended`` / ``returns`` are [T, B] as in IMPALA's ``EpisodeStats``.
    """

    ended: jax.Array
    returns: jax.Array
    true_values: jax.Array
    phase: jax.Array


def to_trajectory(batch: Batch, discount: float) -> Trajectory:
    """IMPALA's batch with discounts gamma * (1 - done) (termination and truncation both cut the returns)."""
    return Trajectory(
        observations=batch.observations,
        actions=batch.actions,
        rewards=batch.rewards,
        discounts=discount * (1.0 - batch.dones.astype(batch.rewards.dtype)),
        behaviour_logits=batch.behaviour_logits,
    )


def make_control_collect(env: JaxEnv, network: Any, unroll_length: int, discount: float) -> Collect:
    """Continue the B environments of the carry (an ``ActorState``) for ``unroll_length`` steps with ``params``."""

    def collect(key: jax.Array, params: Params, carry: ActorState) -> tuple[ActorState, Trajectory, EpisodeStats]:
        carry, batch, stats = unroll(key, params, carry, env=env, network=network, unroll_length=unroll_length)
        return carry, to_trajectory(batch, discount), stats

    return collect


def make_fresh_episodes_collect(
    env: JaxEnv, network: Any, episode_length: int, batch_size: int, discount: float
) -> Collect:
    """Reset B environments and run them ``episode_length`` steps; the carry passes through unchanged."""

    def collect(key: jax.Array, params: Params, carry: Any) -> tuple[Any, Trajectory, EpisodeStats]:
        reset_key, unroll_key = jax.random.split(key)
        fresh = init_actor(reset_key, env, batch_size)
        _, batch, stats = unroll(unroll_key, params, fresh, env=env, network=network, unroll_length=episode_length)
        return carry, to_trajectory(batch, discount), stats

    return collect


def _prediction_step(env: JaxEnv, discount: float, carry: ActorState, key: jax.Array) -> tuple[ActorState, tuple]:
    keys = jax.random.split(key, carry.observation.shape[0])
    actions = jnp.zeros(carry.observation.shape[0], jnp.int32)
    env_state, ts = jax.vmap(env.step)(keys, carry.env_state, actions)
    done = jnp.logical_or(ts.terminated, ts.truncated)
    episode_return = carry.episode_return + ts.reward
    out = (carry.observation, ts.reward, discount * (1.0 - done.astype(jnp.float32)), done, episode_return)
    return ActorState(env_state, ts.observation, jnp.where(done, 0.0, episode_return)), out


def make_prediction_collect(env: Any, unroll_length: int, discount: float) -> Collect:
    """Continue the B environments (no policy) for ``unroll_length`` steps; stats need ``env.true_values``."""

    def collect(key: jax.Array, params: Params, carry: ActorState) -> tuple[ActorState, Trajectory, PredictionStats]:
        del params
        step = functools.partial(_prediction_step, env, discount)
        carry, (obs, rewards, discounts, dones, returns) = jax.lax.scan(step, carry, jax.random.split(key, unroll_length))
        traj = Trajectory(
            observations=jnp.concatenate([obs, carry.observation[None]], axis=0),
            actions=jnp.zeros(rewards.shape, jnp.int32),
            rewards=rewards,
            discounts=discounts,
            behaviour_logits=jnp.zeros((*rewards.shape, 1), rewards.dtype),
        )
        stats = PredictionStats(
            ended=dones,
            returns=jnp.where(dones, returns, 0.0),
            true_values=jax.vmap(env.true_values)(carry.env_state),
            phase=jax.vmap(env.phase)(carry.env_state),
        )
        return carry, traj, stats

    return collect
