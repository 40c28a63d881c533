"""TD(lambda)'s jitted loop on pure-JAX prediction environments (the builder is in ``build.py``).

One counted "update" is ``trajectories_per_update`` consecutive trajectories, each followed by one TD(lambda)
step (6 = FRODO's M + 1 batches, so both agents consume and log the same environment steps per update).
Metrics as FRODO's prediction trainer: ``value_error`` after every trajectory (chunk mean), ``changepoint_error``
(per switching period the peak value error, averaged over the chunk's periods), returns and episodes.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlrepro.training.unroll import ActorState, changepoint_error, init_actor, make_prediction_collect
from rlrepro.agents.td_lambda.config import TdLambdaConfig
from rlrepro.agents.td_lambda.learner import TdLambdaState, init, update
from rlrepro.training.scan import ScannedTrainer, scanned_trainer


class TdTrainState(NamedTuple):
    """One seed's run: learner state, the environments, raw PRNG key data and frames (int32)."""

    learner: TdLambdaState
    actor: ActorState
    rng: jax.Array
    frames: jax.Array


class TdChunkMetrics(NamedTuple):
    """Chunk summaries (see the module docstring)."""

    td_loss: jax.Array
    value_error: jax.Array
    changepoint_error: jax.Array
    episodes: jax.Array
    mean_return: jax.Array
    frames: jax.Array


def _init(key: jax.Array, env: Any, config: TdLambdaConfig) -> TdTrainState:
    learner_key, actor_key, rng = jax.random.split(key, 3)
    return TdTrainState(init(config, learner_key, env.observation_shape), init_actor(actor_key, env, 1), rng,
                        jnp.zeros((), jnp.int32))


def _trajectory_step(carry: TdTrainState, key: jax.Array, env: Any, config: TdLambdaConfig) -> tuple[TdTrainState, tuple]:
    collect = make_prediction_collect(env, config.unroll_length, config.discount)
    actor, traj, stats = collect(key, None, carry.actor)
    learner, loss = update(config, carry.learner, traj)
    values = config.make_network().apply(learner.params, env.all_observations())
    error = jnp.mean(jnp.square(values[None] - stats.true_values))
    frames = carry.frames + config.unroll_length
    return TdTrainState(learner, actor, carry.rng, frames), (loss, error, stats.phase[0], stats.ended, stats.returns)


def run_chunk(state: TdTrainState, env: Any, config: TdLambdaConfig, updates_per_chunk: int) -> tuple[TdTrainState, TdChunkMetrics]:
    """``updates_per_chunk * trajectories_per_update`` TD(lambda) steps in one ``lax.scan``."""
    rng, key = jax.random.split(state.rng)
    steps = updates_per_chunk * config.trajectories_per_update
    step = functools.partial(_trajectory_step, env=env, config=config)
    state, (losses, errors, phases, ended, returns) = jax.lax.scan(step, state._replace(rng=rng), jax.random.split(key, steps))
    episodes = jnp.sum(ended.astype(jnp.int32))
    mean_return = jnp.where(episodes > 0, jnp.sum(returns) / jnp.maximum(episodes, 1), jnp.nan)
    metrics = TdChunkMetrics(jnp.mean(losses), jnp.mean(errors), changepoint_error(errors, phases), episodes,
                             mean_return, state.frames)
    return state, metrics


def make_td_lambda_trainer(env: Any, config: TdLambdaConfig, *, updates_per_chunk: int) -> ScannedTrainer:
    """The jitted TD(lambda) loop for one seed, and over seeds."""
    init_fn = functools.partial(_init, env=env, config=config)
    chunk_fn = functools.partial(run_chunk, env=env, config=config, updates_per_chunk=updates_per_chunk)
    return scanned_trainer(init_fn, chunk_fn)
