"""Time-major trajectories of B pure-JAX environments stepped in lockstep inside a jitted program, and the actors
that make them (IMPALA's synchronous actor, which FRODO and TD(lambda) use too).

``unroll`` runs T steps of a policy network in the B environments with ``lax.scan`` (IMPALA actors copy the
learner's parameters, run n steps and send the trajectory with the behaviour logits mu(.|x_t); §3, notes §1.6);
the environments auto-reset in the same step (``rlrepro.environments.base``). It gives IMPALA's learner ``Batch``
(dones); ``to_trajectory`` turns one into FRODO's ``Trajectory`` (discounts). ``make_prediction_collect`` steps
environments that move by themselves (the random walk of FRODO's prediction task: no policy).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlrepro.environments.base import JaxEnv

Params = Any


class Batch(NamedTuple):
    """A time-major batch of B unrolls of length T (notes §1.4).

    Attributes:
      observations: [T + 1, B, *obs]; the first is the last observation of the previous unroll, the
        last is only used for the bootstrap value V(x_T). Atari: uint8 [T + 1, B, 4, 84, 84]
        (channels first, as the environment gives them).
      actions: [T, B] int32, a_t taken at observations[t].
      rewards: [T, B] float32, raw (unclipped) r_t of the transition t -> t + 1.
      dones: [T, B] bool, terminated | truncated of the transition t -> t + 1. Both cut the traces
        (discount_t = gamma * (1 - done_t)): time limits are treated as terminal, as in the released
        code, because with same-step auto-reset observations[t + 1] already belongs to the next episode.
        They also reset the core state before observations[t + 1].
      behaviour_logits: [T, B, A], the actor's logits mu(.|x_t).
      initial_core_state: the actor's core state before observations[0] (already zeroed if
        observations[0] starts an episode): ``()`` for feed-forward networks (default), ``(c, h)``
        of [B, lstm_size] for an LSTM core.
      prev_action: [B] int32, the action that led to observations[0] (a_{-1}, the last action of the
        previous unroll); None: zeros. Only read by networks with last action/reward inputs.
      prev_reward: [B] float32, the raw reward that led to observations[0]; None: zeros.
      mask: [T, B], 0 where the step t is not a real transition (gymnasium's next-step autoreset
        dummy step); its loss terms are dropped. None: all steps count.
    """

    observations: jax.Array
    actions: jax.Array
    rewards: jax.Array
    dones: jax.Array
    behaviour_logits: jax.Array
    initial_core_state: Any = ()
    prev_action: jax.Array | None = None
    prev_reward: jax.Array | None = None
    mask: jax.Array | None = None


class Trajectory(NamedTuple):
    """A time-major batch of B trajectories of T steps (notes §1.1).

    Attributes:
      observations: [T + 1, B, *obs]; observations[t] is S_t, the last one only feeds v(S_T).
      actions: [T, B] int32 (zeros for prediction).
      rewards: [T, B], R_{t+1}.
      discounts: [T, B], gamma_{t+1} = gamma * (1 - done) (0 at an episode end).
      behaviour_logits: [T, B, A], mu(.|S_t) of the actor (prediction: [T, B, 1] zeros).
    """

    observations: jax.Array
    actions: jax.Array
    rewards: jax.Array
    discounts: jax.Array
    behaviour_logits: jax.Array


# collect(key, acting_params, carry) -> (carry, Trajectory, stats); probe(params, stats) -> pytree of scalars.
Collect = Callable[[jax.Array, Params, Any], tuple[Any, Trajectory, Any]]


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
    key: jax.Array, params: Params, state: ActorState, env: JaxEnv, network: Any
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
    network: Any,
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


def to_trajectory(batch: Batch, discount: float) -> Trajectory:
    """IMPALA's batch with discounts gamma * (1 - done) (termination and truncation both cut the returns)."""
    return Trajectory(
        observations=batch.observations,
        actions=batch.actions,
        rewards=batch.rewards,
        discounts=discount * (1.0 - batch.dones.astype(batch.rewards.dtype)),
        behaviour_logits=batch.behaviour_logits,
    )


class PredictionStats(NamedTuple):
    """A prediction trajectory's episode bookkeeping and, at its end, the true values [B, N] and the phase [B].

    ``ended`` / ``returns`` are [T, B] as in IMPALA's ``EpisodeStats``.
    """

    ended: jax.Array
    returns: jax.Array
    true_values: jax.Array
    phase: jax.Array


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


def changepoint_error(errors: jax.Array, phases: jax.Array) -> jax.Array:
    """Mean over the switching periods present of the peak error in each period (errors, phases: [K])."""
    segments = phases - jnp.min(phases)
    peaks = jax.ops.segment_max(errors, segments, num_segments=errors.shape[0])
    present = jax.ops.segment_sum(jnp.ones_like(errors), segments, num_segments=errors.shape[0]) > 0
    return jnp.sum(jnp.where(present, peaks, 0.0)) / jnp.maximum(jnp.sum(present), 1)
