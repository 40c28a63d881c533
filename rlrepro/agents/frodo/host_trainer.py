"""FRODO on Atari (§5.3, App. B): IMPALA's actors and Atari environment, FRODO's meta-update as the learner.

The acting half is IMPALA's (``rlrepro.training.actor_learner.HostActorLearner``: actor threads feeding a
bounded queue, or the deterministic synchronous actor; the same evaluation games). Each counted update is
one meta-iteration: the learner takes M + 1 batches of B unrolls of T steps from the actors, makes the M
inner updates of the agent towards G_eta (eq. 10, the meta-network reading R, gamma, v(S'), pi(A|S), mu(A|S)
and the torso embedding), evaluates IMPALA's V-trace actor-critic loss on the (M + 1)-th batch (eq. 11) and
steps eta on its meta-gradient (plus c times the consistency loss), all in one jitted call. The data were
acted by the actors with the parameters they last received, so pi != mu in threaded mode (the off-policy
inputs and V-trace's corrections matter). One seed per job; after a resume the actors start new games.

Metrics per chunk: frames (all M + 1 batches, times the action repeat), finished games and their mean raw
score, learner frames per second, the mean policy lag (in meta-updates), the learner's ``MetaMetrics``
(among them ``vtrace_g_mse``: the mean squared difference between the V-trace return and G_eta on the
inner batches, Fig. 3d) and at the last chunk ``eval_return``.
"""

from __future__ import annotations

import functools
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.agents.frodo.config import FrodoConfig
from rlrepro.agents.frodo.learner import FrodoState, MetaMetrics, Params, Trajectory, init, make_networks, meta_update
from rlrepro.training.unroll import to_trajectory
from rlrepro.training.actor_learner import batch_from_unrolls
from rlrepro.environments.atari import AtariEnv
from rlrepro.training.actor_learner import HostActorLearner, sample_action


class FrodoHostState(NamedTuple):
    """What one seed's run carries between chunks (checkpointable): learner, raw key data, meta-updates (int32)."""

    learner: FrodoState
    rng: jax.Array
    version: jax.Array


class FrodoHostMetrics(NamedTuple):
    """One chunk, as [1] arrays (one seed per job)."""

    frames: np.ndarray
    episodes: np.ndarray
    mean_return: np.ndarray
    fps: np.ndarray
    policy_lag: np.ndarray
    outer_loss: np.ndarray
    meta_loss: np.ndarray
    inner_loss: np.ndarray
    consistency_loss: np.ndarray
    mean_target: np.ndarray
    vtrace_g_mse: np.ndarray
    meta_grad_norm: np.ndarray
    eval_return: np.ndarray
    eval_scores: np.ndarray  # [1, games] at the last chunk, [1, 0] before (rlrepro.jobs.run_folder.EVAL_SCORES)


def _policy_step(
    params: Params, observation: jax.Array, last_action: Any, last_reward: Any, core_state: Any, key: jax.Array, *, network: Any
) -> tuple[jax.Array, jax.Array, Any, jax.Array]:
    """Sample a ~ pi(.|x) for B observations (a ``PolicyStep``: returns the next key too); the feed-forward agent
    ignores the last action, reward and core."""
    del last_action, last_reward
    logits, _ = network.apply(params, observation)
    action, key = sample_action(key, logits)
    return action, logits, core_state, key


def _take_batches(key: jax.Array, params: Params, carry: tuple[Trajectory, ...]) -> tuple[Any, Trajectory, tuple]:
    """The learner's ``collect``: the next of the M + 1 batches the actors already played."""
    del key, params
    return carry[1:], carry[0], ()


def _no_probe(params: Params, stats: Any) -> tuple[jax.Array, jax.Array]:
    return jnp.full((), jnp.nan), jnp.zeros((), jnp.int32)


def host_meta_update(
    state: FrodoState, batches: tuple[Trajectory, ...], key: jax.Array, *, config: FrodoConfig, nets: Any
) -> tuple[FrodoState, MetaMetrics]:
    """One meta-iteration on M + 1 given batches (``learner.meta_update`` with the batches as its data source)."""
    state, _, metrics, _, _ = meta_update(
        state, batches, key, config=config, nets=nets, collect_inner=_take_batches, collect_outer=_take_batches,
        probe=_no_probe,
    )  # fmt: skip
    return state, metrics


class HostFrodoTrainer(HostActorLearner):
    """The actors and FRODO's learner for one (agent, Atari environment); runs chunks of meta-updates."""

    def __init__(
        self, config: FrodoConfig, env_spec: Any, actor_spec: Any, *, updates_per_chunk: int, total_updates: int
    ):
        if config.outer != "vtrace" or config.validation_length != config.unroll_length:
            raise ValueError("FRODO on Atari uses the V-trace outer loss on a batch of the inner unroll length")
        self.config, self.updates_per_chunk, self.total_updates = config, updates_per_chunk, total_updates
        probe = AtariEnv(env_spec, num_envs=1, seed=0, num_threads=1)
        self.num_actions, self.observation_shape = probe.num_actions, probe.observation_shape
        probe.close()
        self.nets = make_networks(config, self.num_actions)
        self.policy_step = jax.jit(functools.partial(_policy_step, network=self.nets.agent))
        self.update = jax.jit(functools.partial(host_meta_update, config=config, nets=self.nets))
        super().__init__(env_spec, actor_spec, unroll_length=config.unroll_length, policy_lag=0)
        if config.batch_size % self.envs_per_actor:
            raise ValueError(
                f"batch_size {config.batch_size} must be a multiple of the environments per actor ({self.envs_per_actor})"
            )

    def init(self, key_data: jax.Array) -> FrodoHostState:
        key = jax.random.wrap_key_data(jnp.asarray(key_data, jnp.uint32))
        learner_key, rng = jax.random.split(key)
        learner = init(self.config, learner_key, self.observation_shape, self.num_actions)
        return FrodoHostState(learner, jax.random.key_data(rng), jnp.zeros((), jnp.int32))

    def next_batches(self) -> tuple[tuple[Trajectory, ...], list[int], list[float]]:
        """M + 1 batches of B trajectories from the actors, with the unrolls' parameter versions and finished games."""
        per_batch = self.config.batch_size // self.envs_per_actor
        batches, versions, returns = [], [], []
        for _ in range(self.config.inner_steps + 1):
            unrolls = [self._next_unroll() for _ in range(per_batch)]
            versions.extend(u.param_version for u in unrolls)
            returns.extend(r for u in unrolls for r in u.episode_returns)
            batches.append(to_trajectory(batch_from_unrolls(unrolls), self.config.discount))
        return tuple(batches), versions, returns

    def run_chunk(self, state: FrodoHostState) -> tuple[FrodoHostState, FrodoHostMetrics]:
        if self._source is None:
            self._start_actors(state.learner.params, state.rng, int(state.version))
        started = time.monotonic()
        learner, version, rng = state.learner, int(state.version), jnp.asarray(state.rng, jnp.uint32)
        lags, returns, learner_metrics = [], [], []
        for _ in range(self.updates_per_chunk):
            batches, versions, finished = self.next_batches()
            lags.extend(version - v for v in versions)
            returns.extend(finished)
            learner, metrics = self.update(learner, batches, jax.random.fold_in(jax.random.wrap_key_data(rng), version))
            version += 1
            self._publish(learner.params, version)
            learner_metrics.append(metrics)
        metrics = self._chunk_metrics(
            FrodoHostMetrics, learner.params, version, total_updates=self.total_updates,
            frames_per_update=self.config.frames_per_meta_update * self.env_spec.action_repeat,
            started=started, returns=returns, lags=lags, learner_metrics=learner_metrics,
        )  # fmt: skip
        return FrodoHostState(learner, state.rng, jnp.asarray(version, jnp.int32)), metrics
