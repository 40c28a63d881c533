"""IMPALA+SR on Atari: the host actor-learner (``rlrepro.training.actor_learner``) with the episodic memory as agent state.

Paper §2 and notes §1.3: the memory of one state representation per step of the running episode is part of the
agent state, carried across unroll boundaries and reset at episode start. Here the actor's recurrent state is
``SRHostCore(lstm, memory)``: after acting in s_t the policy step writes the torso output of s_t to slot
``counter mod C`` (released-code order: predict, then write), and ``reset_core`` empties the memory (and zeroes the
LSTM) of the streams whose episode just ended. The memory is a host numpy buffer written in place (a functional
copy of ``[N, C, d]`` at every step would cost more than the step); ``play_unroll`` records a copy of the state at
the unroll's start, which travels with the unroll through the queue as ``Unroll.initial_core_state``. The learner
(``rlrepro.agents.impala_sr.learner``) continues every stream's memory from exactly that state and re-evaluates c
on it with its current parameters (the memory holds the actor's stale, stop-gradiented representations).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.training.actor_learner import HostState
from rlrepro.agents.impala_sr.config import ImpalaSRConfig
from rlrepro.agents.impala_sr.learner import SRBatch, make_learner
from rlrepro.agents.impala_sr.networks import SRActorCritic, make_sr_network, representation_dim
from rlrepro.environments.atari import AtariEnv
from rlrepro.losses.synthetic_returns import EpisodicMemory
from rlrepro.training.actor_learner import HostActorLearner, Unroll, sample_action


class SRHostCore(NamedTuple):
    """An actor's recurrent state for N streams: the LSTM state and the episodic memory (numpy, on the host).

    Attributes:
      lstm: ``()`` or ``(c, h)`` of ``[N, lstm_size]``, before the next observation.
      memory: values ``[N, C, d]`` float32 and counter ``[N]`` int32, before the next observation.
    """

    lstm: Any
    memory: EpisodicMemory


class SRHostMetrics(NamedTuple):
    """One chunk, as [1] arrays (one seed per job): IMPALA's host metrics plus the SR module's."""

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
    sr_loss: np.ndarray  # sum over T x B of the per-step SR loss, mean over the chunk's updates
    synthetic_return: np.ndarray  # mean c(s_t)
    synthetic_return_sd: np.ndarray  # sd of c(s_t) over the batch's states
    gate: np.ndarray  # mean g(s_t)
    eval_return: np.ndarray
    eval_scores: np.ndarray  # [1, games] at the last chunk, [1, 0] before (rlrepro.jobs.run_folder.EVAL_SCORES)


def write_host_memory(memory: EpisodicMemory, rows: np.ndarray) -> EpisodicMemory:
    """Write ``rows`` [N, d] to slot ``counter mod C`` of every stream, in place (``write_memory`` of the losses
    module, on the host); returns the memory with the counters advanced."""
    values, counter = memory.values, memory.counter
    values[np.arange(values.shape[0]), counter % values.shape[1]] = rows
    return EpisodicMemory(values, counter + 1)


def reset_host_memory(memory: EpisodicMemory, done: np.ndarray) -> EpisodicMemory:
    """Empty the memory of the streams where ``done`` [N] is set (the next step starts an episode)."""
    done = np.asarray(done, bool)
    if done.any():
        memory.values[done] = 0.0
    return EpisodicMemory(memory.values, np.where(done, 0, memory.counter).astype(np.int32))


def _act(params: Any, observation: jax.Array, lstm: Any, key: jax.Array, *, network: SRActorCritic) -> tuple:
    """One acting step for N streams: ``a ~ pi(.|x)``, the behaviour logits, the torso output, the new LSTM and the
    next key (``sample_action``)."""
    n = observation.shape[0]
    out = network.apply(params, observation[None], jnp.zeros((1, n), bool), lstm, method=SRActorCritic.unroll)
    action, key = sample_action(key, out.logits[0])
    return action, out.logits[0], out.torso[0], out.core_state, key


def sr_batch_from_unrolls(unrolls: list[Unroll]) -> SRBatch:
    """Concatenate unrolls along the environment axis into one learner batch with the memory at their start."""
    cat = lambda name: np.concatenate([getattr(u, name) for u in unrolls], axis=1)  # noqa: E731
    start = jax.tree.map(lambda *xs: np.concatenate(xs, axis=0), *[u.initial_core_state for u in unrolls])
    rewards = cat("rewards")
    return SRBatch(
        observations=jnp.asarray(cat("observations")),
        actions=jnp.asarray(cat("actions")),
        rewards=jnp.asarray(rewards),
        dones=jnp.asarray(cat("dones")),
        env_discounts=jnp.ones(rewards.shape, jnp.float32),  # ALE sets no per-step discount
        behaviour_logits=jnp.asarray(cat("behaviour_logits")),
        initial_core_state=jax.tree.map(jnp.asarray, start.lstm),
        initial_memory=EpisodicMemory(jnp.asarray(start.memory.values), jnp.asarray(start.memory.counter, jnp.int32)),
    )


class HostImpalaSRTrainer(HostActorLearner):
    """The actors and the SR learner for one (IMPALA+SR agent, Atari game); runs chunks of updates (one seed)."""

    def __init__(self, config: ImpalaSRConfig, env_spec: Any, actor_spec: Any, *, updates_per_chunk: int):
        if actor_spec.mode == "a3c":
            raise ValueError("agent.actor.mode a3c is not wired for impala_sr: use threaded, sync or a2c_sync_traj")
        self.config = config
        self.updates_per_chunk = updates_per_chunk
        probe = AtariEnv(env_spec, num_envs=1, seed=0, num_threads=1)
        self.num_actions, self.observation_shape = probe.num_actions, probe.observation_shape
        probe.close()
        self.network = make_sr_network(config, self.num_actions)
        self.learner = make_learner(config, self.observation_shape, self.num_actions)
        self.update = jax.jit(self.learner.update)
        self._act = jax.jit(functools.partial(_act, network=self.network))
        super().__init__(env_spec, actor_spec, unroll_length=config.impala.unroll_length, policy_lag=config.impala.policy_lag)
        if config.impala.batch_size % self.envs_per_actor:
            raise ValueError(
                f"batch_size {config.impala.batch_size} must be a multiple of the environments per actor ({self.envs_per_actor})"
            )

    # -- the agent state the actors carry ------------------------------------------------------------------
    def _initial_core(self, n: int) -> SRHostCore:
        lstm_size = self.network.lstm_size
        lstm = () if lstm_size is None else (np.zeros((n, lstm_size), np.float32), np.zeros((n, lstm_size), np.float32))
        memory = EpisodicMemory(
            np.zeros((n, self.config.sr.memory_capacity, representation_dim(self.config)), np.float32),
            np.zeros((n,), np.int32),
        )
        return SRHostCore(lstm, memory)

    def _reset_core(self, core: SRHostCore, done: np.ndarray) -> SRHostCore:
        lstm = jax.tree.map(lambda c: np.where(np.asarray(done, bool)[:, None], 0.0, c).astype(np.float32), core.lstm)
        return SRHostCore(lstm, reset_host_memory(core.memory, done))

    def policy_step(self, params: Any, observation: np.ndarray, prev_action: Any, prev_reward: Any,
                    core: SRHostCore, key: jax.Array) -> tuple[Any, Any, SRHostCore, jax.Array]:
        """Act in s_t, then write s_t's torso output to the memory (the ``PolicyStep`` of the actor-learner); one
        transfer to the host of everything but the key, which stays where the actors act."""
        *out, key = self._act(params, observation, core.lstm, key)
        action, logits, torso, lstm = jax.device_get(out)
        memory = write_host_memory(core.memory, np.asarray(torso, np.float32))
        return action, logits, SRHostCore(jax.tree.map(lambda x: np.asarray(x, np.float32), lstm), memory), key

    # -- state -------------------------------------------------------------------------------------------
    def init(self, key_data: jax.Array) -> HostState:
        key = jax.random.wrap_key_data(jnp.asarray(key_data, jnp.uint32))
        learner_key, rng = jax.random.split(key)
        return HostState(self.learner.init(learner_key), jax.random.key_data(rng), jnp.zeros((), jnp.int32))

    # -- one chunk ---------------------------------------------------------------------------------------
    def run_chunk(self, state: HostState) -> tuple[HostState, SRHostMetrics]:
        if self._source is None:
            self._start_actors(state.learner.params, state.rng, int(state.version))
        learner, version, metrics = self._learn_chunk(
            state.learner, int(state.version), sr_batch_from_unrolls, SRHostMetrics,
            batch_size=self.config.impala.batch_size, total_updates=self.config.impala.total_updates,
            frames_per_update=self.config.frames_per_update * self.env_spec.action_repeat,
        )  # fmt: skip
        return HostState(learner, state.rng, jnp.asarray(version, jnp.int32)), metrics
