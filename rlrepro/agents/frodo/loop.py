"""FRODO's jitted training loop on pure-JAX environments (the builder is in ``build.py``).

One counted "update" is one meta-iteration: M inner updates of the agent plus one meta-update of eta,
consuming (M * T + T_validation) * B environment steps (all counted as frames, notes §5 item 9).
``run_chunk`` scans ``updates_per_chunk`` meta-iterations; everything is written for one seed and
``jit(vmap)``-ed over seeds.

Logged per chunk (besides the learner's ``MetaMetrics``): ``mean_return`` / ``episodes`` (Monte Carlo
outer loss: the validation episodes, played by the agent after its M inner updates; otherwise the training
episodes), ``train_return`` (the training episodes), and for prediction environments that know their true
values (the random walk): ``value_error`` (mean over states of (v - v_true)^2, measured after every
trajectory, averaged over the chunk) and ``changepoint_error`` (per switching period the peak of that error,
averaged over the periods of the chunk: the spikes of Fig. 2b).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlrepro.agents.frodo.actor import make_control_collect, make_fresh_episodes_collect
from rlrepro.agents.frodo.config import FrodoConfig
from rlrepro.agents.frodo.learner import FrodoState, MetaMetrics, Networks, init, make_networks, meta_update
from rlrepro.training.unroll import ActorState, changepoint_error, init_actor, make_prediction_collect
from rlrepro.environments.base import JaxEnv
from rlrepro.training.scan import ScannedTrainer, check_updates_per_chunk, raw_key, scanned_trainer


class FrodoTrainState(NamedTuple):
    """One seed's run: learner state, the B environments of the inner stream, raw PRNG key data, frames (int32)."""

    learner: FrodoState
    actor: ActorState
    rng: jax.Array
    frames: jax.Array


class FrodoChunkMetrics(NamedTuple):
    """Chunk means of ``MetaMetrics`` plus returns, episodes, value errors (NaN where not applicable), frames."""

    outer_loss: jax.Array
    meta_loss: jax.Array
    inner_loss: jax.Array
    consistency_loss: jax.Array
    mean_target: jax.Array
    vtrace_g_mse: jax.Array
    meta_grad_norm: jax.Array
    value_error: jax.Array
    changepoint_error: jax.Array
    train_return: jax.Array
    episodes: jax.Array
    mean_return: jax.Array
    frames: jax.Array


def _collectors(env: JaxEnv, config: FrodoConfig, nets: Networks) -> tuple[Any, Any]:
    """(collect_inner, collect_outer) for the config's task and outer loss."""
    if config.task == "prediction":
        collect = make_prediction_collect(env, config.unroll_length, config.discount)
        return collect, make_prediction_collect(env, config.validation_length, config.discount)
    inner = make_control_collect(env, nets.agent, config.unroll_length, config.discount)
    if config.outer == "monte_carlo":
        outer = make_fresh_episodes_collect(env, nets.agent, config.validation_length, config.batch_size, config.discount)
    else:
        outer = make_control_collect(env, nets.agent, config.validation_length, config.discount)
    return inner, outer


def _probe(env: Any, config: FrodoConfig, nets: Networks) -> Callable[[Any, Any], jax.Array]:
    """Value error over all states after an update (environments with ``true_values``), else NaN."""
    if config.task != "prediction" or not hasattr(env, "true_values"):
        return lambda params, stats: (jnp.full((), jnp.nan), jnp.zeros((), jnp.int32))

    def probe(params: Any, stats: Any) -> tuple[jax.Array, jax.Array]:
        values = nets.agent.apply(params, env.all_observations())
        return jnp.mean(jnp.square(values[None] - stats.true_values)), stats.phase[0]

    return probe


def init_train_state(key: jax.Array, env: JaxEnv, config: FrodoConfig) -> FrodoTrainState:
    """Fresh learner, B reset environments, frames 0."""
    learner_key, actor_key, rng = jax.random.split(raw_key(key), 3)
    learner = init(config, learner_key, env.observation_shape, env.num_actions)
    return FrodoTrainState(learner, init_actor(actor_key, env, config.batch_size), rng, jnp.zeros((), jnp.int32))


def _episode_means(stats: Any) -> tuple[jax.Array, jax.Array]:
    """(episodes, mean return) of ``EpisodeStats``-like leaves ``ended`` / ``returns`` (NaN if none ended)."""
    episodes = jnp.sum(stats.ended.astype(jnp.int32))
    mean = jnp.where(episodes > 0, jnp.sum(stats.returns) / jnp.maximum(episodes, 1), jnp.nan)
    return episodes, mean


def run_chunk(
    state: FrodoTrainState, env: JaxEnv, config: FrodoConfig, updates_per_chunk: int
) -> tuple[FrodoTrainState, FrodoChunkMetrics]:
    """``updates_per_chunk`` meta-iterations in a ``lax.scan``; metrics summarised over the chunk."""
    nets = make_networks(config, env.num_actions)
    collect_inner, collect_outer = _collectors(env, config, nets)
    update = functools.partial(
        meta_update, config=config, nets=nets, collect_inner=collect_inner, collect_outer=collect_outer,
        probe=_probe(env, config, nets),
    )

    def step(carry: FrodoTrainState, _: None) -> tuple[FrodoTrainState, tuple]:
        rng, key = jax.random.split(carry.rng)
        learner, actor, metrics, probes, stats = update(carry.learner, carry.actor, key)
        frames = carry.frames + config.frames_per_meta_update
        return FrodoTrainState(learner, actor, rng, frames), (metrics, probes, stats)

    state, (metrics, (errors, phases), stats) = jax.lax.scan(step, state, None, length=updates_per_chunk)
    inner_stats, outer_stats = stats
    train_episodes, train_return = _episode_means(inner_stats)
    episodes, mean_return = train_episodes, train_return
    if config.outer == "monte_carlo":
        episodes, mean_return = _episode_means(outer_stats)
    means = jax.tree.map(jnp.mean, metrics)
    chunk = FrodoChunkMetrics(
        **means._asdict(),
        value_error=jnp.mean(errors),
        changepoint_error=changepoint_error(errors.reshape(-1), phases.reshape(-1)),
        train_return=train_return,
        episodes=episodes,
        mean_return=mean_return,
        frames=state.frames,
    )
    return state, chunk


def make_frodo_trainer(env: JaxEnv, config: FrodoConfig, *, updates_per_chunk: int) -> ScannedTrainer:
    """Build the jitted FRODO loop for a pure-JAX ``env``.

    The seeds are initialised one after another (``lax.map``), not vmapped: the LSTM's orthogonal
    initialisers are QR decompositions, and jaxlib's CPU QR kernel splits a batch over the XLA intra-op
    thread pool and blocks its worker until the parts finish. Vmapped over ~10 seeds, the four gates'
    independent QRs ran at once on both pool workers, each waiting for parts queued behind the other:
    the process deadlocked, idle, before the first chunk. Unbatched QRs never split (and init is cheap).
    """
    check_updates_per_chunk(updates_per_chunk)
    init_fn = functools.partial(init_train_state, env=env, config=config)
    chunk_fn = functools.partial(run_chunk, env=env, config=config, updates_per_chunk=updates_per_chunk)
    return scanned_trainer(init_fn, chunk_fn, init_seeds_one_by_one=True)
