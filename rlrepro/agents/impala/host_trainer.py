"""IMPALA on host environments (Atari): actor threads or a lagged synchronous actor, and the learner.

One seed per job (the emulators are the bottleneck, not the learner's vmap). A chunk is
``updates_per_chunk`` learner updates; each update consumes B trajectories of T steps. The state
passed between chunks (and checkpointed) is the learner's state, the RNG and the parameter version;
the games themselves are not checkpointed: after a resume the actors start new games.

Metrics per chunk: frames consumed (T x B x action repeat per update), finished games and their mean
raw score, learner frames per second (``fps``), the mean policy lag of the batches, the learner's
loss terms, and at the last chunk ``eval_return``: the mean score of separate evaluation games (``eval_scores``:
each game's).
"""

from __future__ import annotations

import functools
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.agents.impala.learner import Batch, LearnerState, apply_gradients, gradients, make_learner
from rlrepro.agents.impala.networks import initial_core_state, make_network, make_policy_step
from rlrepro.networks.lstm import reset_core_state
from rlrepro.agents.impala.sharding import make_sharded_update
from rlrepro.environments.atari import AtariEnv
from rlrepro.training.actor_learner import HostActorLearner, HostState, SharedLearner, Unroll, batch_from_unrolls


class HostMetrics(NamedTuple):
    """One chunk, as [1] arrays (one seed per job)."""

    frames: np.ndarray
    episodes: np.ndarray
    mean_return: np.ndarray
    fps: np.ndarray
    policy_lag: np.ndarray
    total_loss: np.ndarray
    pg_loss: np.ndarray
    baseline_loss: np.ndarray
    entropy: np.ndarray
    grad_norm: np.ndarray
    mean_rho: np.ndarray
    learning_rate: np.ndarray
    eval_return: np.ndarray
    eval_scores: np.ndarray  # [1, games] at the last chunk, [1, 0] before (rlrepro.jobs.run_folder.EVAL_SCORES)


class HostImpalaTrainer(HostActorLearner):
    """Builds the actors and the learner for one (agent, Atari environment) and runs chunks of updates."""

    def __init__(self, config: ImpalaConfig, env_spec: Any, actor_spec: Any, *, updates_per_chunk: int):
        self.config = config
        self.updates_per_chunk = updates_per_chunk
        probe = AtariEnv(env_spec, num_envs=1, seed=0, num_threads=1)
        self.num_actions, self.observation_shape = probe.num_actions, probe.observation_shape
        probe.close()
        self.network = make_network(config, self.num_actions)
        self.learner = make_learner(config, self.observation_shape, self.num_actions)
        # The batch is split along B over every local device (one CPU here; GPUs on a cluster).
        self.sharded = make_sharded_update(self.learner)
        self.update = lambda learner, batch: self.sharded.update(learner, self.sharded.shard_batch(batch))
        self.policy_step = make_policy_step(self.network)
        # A3C: each worker's gradient at its own snapshot, applied to the shared state one at a time.
        self._gradient = jax.jit(functools.partial(gradients, config=config))
        self._apply = jax.jit(functools.partial(apply_gradients, config=config))
        self._shared: SharedLearner | None = None
        super().__init__(env_spec, actor_spec, unroll_length=config.unroll_length, policy_lag=config.policy_lag)
        if config.batch_size % self.envs_per_actor:
            raise ValueError(
                f"batch_size {config.batch_size} must be a multiple of the environments per actor ({self.envs_per_actor})"
            )

    # -- state -------------------------------------------------------------------------------------------
    def init(self, key_data: jax.Array) -> HostState:
        key = jax.random.wrap_key_data(jnp.asarray(key_data, jnp.uint32))
        learner_key, rng = jax.random.split(key)
        return HostState(self.sharded.init(learner_key), jax.random.key_data(rng), jnp.zeros((), jnp.int32))

    def _initial_core(self, n: int) -> Any:
        return jax.tree.map(np.asarray, initial_core_state(self.network, n))

    def _reset_core(self, core: Any, done: np.ndarray) -> Any:
        return reset_core_state(core, done) if core != () else core

    def _start(self, state: HostState) -> None:
        """Start the actors (first chunk, or after a resume) from the state's parameters."""
        if self.actor_spec.mode == "a3c":
            self._shared = SharedLearner(state.learner, self._apply, int(state.version))
        self._start_actors(state.learner.params, state.rng, int(state.version))

    def _shared_learner(self) -> SharedLearner:
        return self._shared

    def _worker_gradient(self, params: Any, unroll: Unroll) -> tuple[Any, Any]:
        return self._gradient(params, batch_from_unrolls([unroll]))

    # -- one chunk ---------------------------------------------------------------------------------------
    def run_chunk(self, state: HostState) -> tuple[HostState, HostMetrics]:
        if self._source is None:
            self._start(state)
        if self.actor_spec.mode == "a3c":
            return self._run_a3c_chunk(state)
        learner, version, metrics = self._learn_chunk(
            state.learner, int(state.version), batch_from_unrolls, HostMetrics, batch_size=self.config.batch_size,
            total_updates=self.config.total_updates,
            frames_per_update=self.config.frames_per_update * self.env_spec.action_repeat,
        )  # fmt: skip
        return HostState(learner, state.rng, jnp.asarray(version, jnp.int32)), metrics

    def _run_a3c_chunk(self, state: HostState) -> tuple[HostState, HostMetrics]:
        """A3C: let the workers apply ``updates_per_chunk`` gradients each (on average); one gradient consumes one
        unroll of one worker's environments (T x num_envs / num_actors steps)."""
        started = time.monotonic()
        count = self.updates_per_chunk * self.actor_spec.num_actors
        self._shared.allow(count)
        lags, returns, learner_metrics = [], [], []
        for _ in range(count):
            result = self._source.get()
            lags.append(result.policy_lag)
            returns.extend(result.episode_returns)
            learner_metrics.append(result.metrics)
        self._shared.wait_until(int(state.version) + count)
        learner, version = self._shared.state, self._shared.version
        metrics = self._chunk_metrics(
            HostMetrics, learner.params, version, total_updates=self.config.total_updates,
            frames_per_update=self.config.unroll_length * self.envs_per_actor * self.env_spec.action_repeat,
            started=started, returns=returns, lags=lags, learner_metrics=learner_metrics,
        )  # fmt: skip
        return HostState(learner, state.rng, jnp.asarray(version, jnp.int32)), metrics
