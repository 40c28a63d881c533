"""The host DQN loop for gymnasium environments: seeds stepped in lockstep, one jitted (vmapped) call per step.

Per environment step: sample a batch per seed from uniform replay, take one update (every
``update_period`` steps once ``min_replay`` transitions are stored) and choose the next actions
epsilon-greedily with the updated parameters, all in one jitted call vmapped over seeds; then step
the gymnasium environments in Python and store the transitions. Terminations get discount 0;
time limits keep gamma and bootstrap from the true next observation.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.agents.dqn.actor import epsilon, epsilon_greedy
from rlrepro.agents.dqn.config import DQNConfig
from rlrepro.agents.dqn.learner import Batch, Learner, LearnerState, make_learner
from rlrepro.agents.dqn.replay import UniformReplay
from rlrepro.environments.gym_envs import HostEnv
from rlrepro.training.lockstep import LockstepHost, LockstepState, SeedEnvs, episode_fields, split_seed_keys


class HostState(SeedEnvs):
    """The host side of a run: environments, replay, current observations and episode bookkeeping."""

    def __init__(self, envs: list[HostEnv], replay: UniformReplay, obs: np.ndarray):
        super().__init__(envs, obs)
        self.replay = replay


DQNState = LockstepState  # (learner, action keys [num_seeds, 2], pending None, host)


class ChunkMetrics(NamedTuple):
    """Per seed: ``frames`` so far, ``episodes`` ended in the chunk and their ``mean_return`` (NaN if none),
    ``normalized_return`` (clipped to [0, 1] with the environment's return range; NaN without one), mean
    ``loss`` and ``mean_q`` (max_a Q at the visited states), the ``epsilon`` at the end of the chunk, and for
    DQNClipped the fraction of the updates' transitions in each case of Fig. 6 (``dqnclipped_case_1`` .. ``_4``;
    NaN for the other losses)."""

    frames: np.ndarray
    episodes: np.ndarray
    mean_return: np.ndarray
    normalized_return: np.ndarray
    loss: np.ndarray
    mean_q: np.ndarray
    epsilon: np.ndarray
    dqnclipped_case_1: np.ndarray
    dqnclipped_case_2: np.ndarray
    dqnclipped_case_3: np.ndarray
    dqnclipped_case_4: np.ndarray


def _act(learner: Learner, config: DQNConfig, params: Any, obs: jax.Array, key: jax.Array, step: jax.Array):
    key, act_key = jax.random.split(key)
    q = learner.apply(params, obs[None])
    action = epsilon_greedy(act_key, q, epsilon(step, config))[0]
    return action, key, jnp.max(q)


def _act_update(learner: Learner, config: DQNConfig, state: LearnerState, batch: Batch, program: Any,
                obs: jax.Array, key: jax.Array, step: jax.Array):
    state, metrics = learner.update(state, batch, program)
    action, key, q = _act(learner, config, state.params, obs, key, step)
    return state, action, key, q, metrics


class HostDQN(LockstepHost):
    """A compiled DQN for one environment shape: ``init`` a batch of seeds, ``run`` steps (``run(state, steps,
    program)``: the loss program of the search, None for the spec's loss), read metrics."""

    def __init__(self, config: DQNConfig, env_spec: Any, *, loss_factory: Any = None):
        probe = HostEnv(env_spec, 0)
        self.obs_dim = int(probe.reset().shape[0])
        self.num_actions = probe.num_actions
        self.config, self.env_spec = config, env_spec
        self.learner = make_learner(config, (self.obs_dim,), self.num_actions, loss_factory)
        self._init = jax.jit(jax.vmap(self.learner.init))
        act = functools.partial(_act, self.learner, config)
        self._act = jax.jit(jax.vmap(act, in_axes=(0, 0, 0, None)))
        act_update = functools.partial(_act_update, self.learner, config)
        self._act_update = jax.jit(jax.vmap(act_update, in_axes=(0, 0, None, 0, 0, None)))

    def init(self, seeds: list[int], total_steps: int) -> DQNState:
        """Fresh learners (network keys from the seeds), environments and replay."""
        net_keys, act_keys = split_seed_keys(seeds)
        learner = self._init(net_keys)
        envs = [HostEnv(self.env_spec, seed=s) for s in seeds]
        obs = np.stack([env.reset() for env in envs])
        capacity = max(1, min(self.config.replay_capacity, total_steps))
        replay = UniformReplay(len(seeds), capacity, self.obs_dim, [s + 1_000_003 for s in seeds])
        return DQNState(learner, act_keys, None, HostState(envs, replay, obs))

    def _advance(self, state: DQNState, program: Any = None) -> tuple[DQNState, tuple]:
        """One environment step of every seed, after an update when one is due: (max_a Q, loss, cases)."""
        config, host, learner, keys = self.config, state.host, state.learner, state.keys
        t = host.steps
        if host.replay.size >= config.min_replay and t % config.update_period == 0:
            batch = Batch(*host.replay.sample(config.batch_size))
            learner, actions, keys, q, update = self._act_update(learner, batch, program, host.obs, keys, t)
            out = (q, update.loss, update.cases)
        else:
            actions, keys, q = self._act(learner.params, host.obs, keys, t)
            out = (q, None, None)
        self._step_envs(host, np.asarray(actions))
        return DQNState(learner, keys, None, host), out

    def _step_envs(self, host: HostState, actions: np.ndarray) -> None:
        n = len(host.envs)
        next_obs = np.empty_like(host.obs)
        rewards, discounts = np.zeros(n, np.float32), np.zeros(n, np.float32)
        reset_obs = host.obs.copy()
        for i in range(n):
            next_obs[i], rewards[i], terminated, _, reset_obs[i] = host.step_env(i, int(actions[i]))
            discounts[i] = 0.0 if terminated else self.config.discount
        host.replay.add(host.obs, actions, rewards, discounts, next_obs)
        host.obs = reset_obs
        host.steps += 1

    def _metrics(self, state: DQNState, mark: list[int], outs: list[tuple]) -> ChunkMetrics:
        host, n = state.host, len(state.host.envs)
        qs = [q for q, _, _ in outs]
        losses = [loss for _, loss, _ in outs if loss is not None]
        cases = [case for _, _, case in outs if case is not None]
        bounds = getattr(self.env_spec, "return_range", None)
        loss = np.mean(np.stack(jax.device_get(losses)), axis=0) if losses else np.full(n, np.nan)
        case = np.mean(np.stack(jax.device_get(cases)), axis=0) if cases else np.full((n, 4), np.nan)  # [n, 4]
        return ChunkMetrics(
            **episode_fields(host, mark, self.env_spec.frames_per_step),
            normalized_return=np.array([np.mean(normalize(r, bounds)) if r and bounds else np.nan
                                        for r in host.returns_since(mark)]),
            loss=loss,
            mean_q=np.mean(np.stack(jax.device_get(qs)), axis=0) if qs else np.full(n, np.nan),
            epsilon=np.full(n, float(epsilon(host.steps, self.config))),
            **{f"dqnclipped_case_{c + 1}": case[:, c] for c in range(4)},
        )


def normalize(returns: list[float], bounds: Any) -> np.ndarray:
    """(R - R_min) / (R_max - R_min), returns first clipped to [R_min, R_max] (released code)."""
    low, high = bounds
    clipped = np.clip(np.asarray(returns, np.float64), low, high)
    return (clipped - low) / (high - low)


def num_steps(frames: int, env_spec: Any) -> int:
    return max(1, math.ceil(frames / env_spec.frames_per_step))
