"""The all-in-JAX IMPALA training loop for pure-JAX environments: act, then update, scanned in chunks.

One synchronous actor steps B environments for T steps with parameters exactly ``policy_lag``
updates old (the controlled policy lag of IMPALA App. E, Fig. E.1; 0 = on-policy), then the learner
takes one update on that batch. With replay (§5.2.2) the actor unrolls only the batch's fresh rows and the
rest are drawn from a FIFO buffer of earlier unrolls (``rlrepro.agents.impala.replay``). ``run_chunk`` scans ``updates_per_chunk`` such steps inside one jitted
call. Everything is written for ONE seed and is deterministic given the key; ``init_batch`` and
``run_chunk_batch`` are the same functions ``jit(vmap(...))``-ed over a leading seed axis.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from rlrepro.training.unroll import ActorState, EpisodeStats, init_actor, unroll
from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.agents.impala.learner import (
    Batch, Learner, LearnerMetrics, LearnerState, Params, apply_to_batch, make_learner,
)
from rlrepro.agents.impala.networks import ActorCritic, init_params, make_network
from rlrepro.agents.impala.replay import ReplayState, add, behaviour_kl, draw, gather, init_replay, mix
from rlrepro.environments.base import JaxEnv
from rlrepro.training.scan import ScannedTrainer, check_updates_per_chunk, lag_slot, raw_key, scanned_trainer


class TrainState(NamedTuple):
    """Everything one seed's run carries; a pytree of arrays only (checkpointable with numpy).

    Attributes:
      learner: parameters, RMSProp state and update count.
      actor: the B environment states, the last observation and the running episode returns.
      params_history: ring buffer of the last L + 1 parameter snapshots (leaves [L + 1, ...]); the
        snapshot after update k sits in slot ``k % (L + 1)``.
      rng: raw uint32 PRNG key data, [2].
      frames: int32 environment steps taken so far (toy envs have no action repeat; overflows past
        2**31 - 1, far beyond toy budgets).
      replay: the learner's replay buffer (``ReplayState``) when ``config.replay_fraction > 0``; ``()`` otherwise.
    """

    learner: LearnerState
    actor: ActorState
    params_history: Params
    rng: jax.Array
    frames: jax.Array
    replay: ReplayState | tuple[()] = ()


class ChunkMetrics(NamedTuple):
    """Learner metrics averaged over the updates of a chunk, plus episode and frame counts.

    ``episodes``: episodes completed during the chunk; ``mean_return``: mean undiscounted raw
    return of those episodes (NaN if none); ``frames``: environment steps at the end of the chunk.
    """

    total_loss: jax.Array
    pg_loss: jax.Array
    baseline_loss: jax.Array
    entropy_loss: jax.Array
    entropy: jax.Array
    grad_norm: jax.Array
    mean_rho: jax.Array
    learning_rate: jax.Array
    episodes: jax.Array
    mean_return: jax.Array
    frames: jax.Array


class ReplayGap(NamedTuple):
    """How off-policy one update's replayed rows are (§5.2.2's "off-policy gap between pi and mu").

    ``age``: mean age of the replayed rows in learner updates (this update's count minus the count when stored);
    ``kl``: mean KL(mu || pi) per step over them, mu the logits they were acted with, pi the learner's before this
    update; ``valid``: whether anything was replayed (not on the first update). Zeros without replay.
    """

    age: jax.Array
    kl: jax.Array
    valid: jax.Array


#: ``ChunkMetrics`` of a run with replay: plus the chunk's replayed rows' mean age (updates) and KL(mu || pi) (nats).
ReplayChunkMetrics = NamedTuple(
    "ReplayChunkMetrics", [*ChunkMetrics.__annotations__.items(), ("replay_age", jax.Array), ("replay_kl", jax.Array)]
)


def actor_params(state: TrainState, config: ImpalaConfig) -> Params:
    """The parameters the actor uses for the next unroll: the learner's, ``config.policy_lag`` updates old."""
    slot = lag_slot(state.learner.step, config.policy_lag)
    return jax.tree.map(lambda history: history[slot], state.params_history)


def init_train_state(key: jax.Array, env: JaxEnv, config: ImpalaConfig, learner: Learner) -> TrainState:
    """Fresh learner, B reset environments, a history filled with the initial parameters, frames 0."""
    learner_key, actor_key, rng = jax.random.split(raw_key(key), 3)
    learner_state = learner.init(learner_key)
    history = jax.tree.map(
        lambda p: jnp.broadcast_to(p, (config.policy_lag + 1, *p.shape)), learner_state.params
    )
    actor = init_actor(actor_key, env, config.fresh_batch_size)
    return TrainState(
        learner=learner_state,
        actor=actor,
        params_history=history,
        rng=rng,
        frames=jnp.zeros((), jnp.int32),
        replay=_empty_replay(actor, env, config),
    )


def _empty_replay(actor: ActorState, env: JaxEnv, config: ImpalaConfig) -> ReplayState | tuple[()]:
    """An empty buffer shaped like one unroll of ``actor`` (or ``()`` without replay)."""
    if config.replay_fraction == 0:
        return ()
    network = make_network(config, env.num_actions)
    key = jax.random.PRNGKey(0)

    def one_unroll() -> Batch:
        params = init_params(network, key, env.observation_shape)
        return unroll(key, params, actor, env=env, network=network, unroll_length=config.unroll_length)[1]

    example = jax.eval_shape(one_unroll)
    example = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), example)
    return init_replay(config.replay_capacity, example)


def _replay_gap(replay: ReplayState, slots: jax.Array, valid: jax.Array, replayed: Batch, network: ActorCritic,
                learner: LearnerState) -> ReplayGap:
    """The age and KL(mu || pi) of the rows just drawn from ``slots``, pi the learner's parameters before the update."""
    age = jnp.mean((learner.step - replay.stored_at[slots]).astype(jnp.float32))
    logits, _ = apply_to_batch(network, learner.params, replayed)
    kl = jnp.mean(behaviour_kl(replayed.behaviour_logits, jax.lax.stop_gradient(logits[:-1])))
    return ReplayGap(age, kl, valid)


def train_step(
    state: TrainState, env: JaxEnv, config: ImpalaConfig, learner: Learner
) -> tuple[TrainState, tuple[LearnerMetrics, EpisodeStats, ReplayGap]]:
    """One unroll with the lagged parameters, one learner update, and the new snapshot into the ring buffer."""
    rng, unroll_key = jax.random.split(state.rng)
    network = make_network(config, env.num_actions)
    actor, batch, stats = unroll(
        unroll_key, actor_params(state, config), state.actor,
        env=env, network=network, unroll_length=config.unroll_length,
    )
    replay = state.replay
    zero = jnp.zeros((), jnp.float32)
    gap = ReplayGap(zero, zero, jnp.zeros((), bool))
    if config.replay_fraction > 0:
        # This unroll is stored (FIFO), and the replayed rows are drawn from the unrolls stored before it (§5.2.2).
        rng, replay_key = jax.random.split(rng)
        replay = add(replay, batch, update=state.learner.step)
        slots, valid = draw(replay, replay_key, config.replay_batch_size, skip_newest=config.fresh_batch_size)
        replayed = gather(replay, slots)
        gap = _replay_gap(replay, slots, valid, replayed, network, state.learner)
        batch = mix(batch, replayed, valid)
    learner_state, metrics = learner.update(state.learner, batch)
    slot = lag_slot(state.learner.step, config.policy_lag)
    history = jax.tree.map(lambda h, p: h.at[slot].set(p), state.params_history, learner_state.params)
    frames = state.frames + config.frames_per_update
    return TrainState(learner_state, actor, history, rng, frames, replay), (metrics, stats, gap)


def run_chunk(
    state: TrainState, env: JaxEnv, config: ImpalaConfig, learner: Learner, updates_per_chunk: int
) -> tuple[TrainState, ChunkMetrics]:
    """``updates_per_chunk`` train steps in a ``lax.scan``; metrics averaged over the chunk (with replay, the
    replayed rows' age and KL over the updates that replayed: NaN if none did)."""

    def step(carry: TrainState, _: None) -> tuple[TrainState, tuple[LearnerMetrics, EpisodeStats, ReplayGap]]:
        return train_step(carry, env, config, learner)

    state, (metrics, stats, gap) = jax.lax.scan(step, state, None, length=updates_per_chunk)
    episodes = jnp.sum(stats.ended.astype(jnp.int32))
    mean_return = jnp.where(episodes > 0, jnp.sum(stats.returns) / jnp.maximum(episodes, 1), jnp.nan)
    means = jax.tree.map(jnp.mean, metrics)
    chunk = ChunkMetrics(**means._asdict(), episodes=episodes, mean_return=mean_return, frames=state.frames)
    if config.replay_fraction == 0:
        return state, chunk
    replayed = jnp.sum(gap.valid)

    def over_replayed(x: jax.Array) -> jax.Array:
        return jnp.where(replayed > 0, jnp.sum(jnp.where(gap.valid, x, 0.0)) / jnp.maximum(replayed, 1), jnp.nan)

    return state, ReplayChunkMetrics(*chunk, replay_age=over_replayed(gap.age), replay_kl=over_replayed(gap.kl))


def make_jax_trainer(
    env: JaxEnv, config: ImpalaConfig, *, updates_per_chunk: int, learner: Learner | None = None
) -> ScannedTrainer:
    """Build the jitted IMPALA loop for a pure-JAX ``env``.

    Args:
      env: a ``JaxEnv`` (same-step auto-reset).
      config: the agent's hyper-parameters; ``config.total_updates`` sets the lr schedule only.
      updates_per_chunk: learner updates per ``run_chunk`` call (each consumes T * B env steps).
      learner: the learner's ``init``/``update`` (default: ``make_learner(config, ...)``; a PBT member's
        learner carries its hyper-parameters in its state, ``rlrepro.agents.impala.population``).
    """
    check_updates_per_chunk(updates_per_chunk)
    learner = learner or make_learner(config, env.observation_shape, env.num_actions)
    init_fn = functools.partial(init_train_state, env=env, config=config, learner=learner)
    chunk_fn = functools.partial(
        run_chunk, env=env, config=config, learner=learner, updates_per_chunk=updates_per_chunk
    )
    return scanned_trainer(init_fn, chunk_fn)
