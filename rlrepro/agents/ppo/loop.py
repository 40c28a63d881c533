"""The host PPO loop: every seed of a job steps its MuJoCo task in lockstep, one jitted (vmapped) call per step
chooses every seed's action; every ``rollout_steps`` steps one jitted (vmapped) call runs every seed's update.

Per step: observations are standardised with each seed's running statistics (when configured) and clipped, the
behaviour's action, log-probability, mean, std and V(s) are recorded with the reward and how the step ended. At a
truncation (time limit) V of the final observation is recorded as the step's bootstrap value; at a terminal
nothing is (the discount is 0). A rollout may span chunks: the partial rollout is part of the state (and of its
checkpoints).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import numpy as np

from rlrepro.agents.ppo import learner as plearner
from rlrepro.agents.ppo.actor import act
from rlrepro.agents.ppo.config import PPOConfig
from rlrepro.environments.mujoco import MujocoHostEnv, task_shape
from rlrepro.losses.refer import learning_rate_schedule
from rlrepro.training.lockstep import LockstepHost, LockstepState, SeedEnvs, episode_fields, split_seed_keys


class RunningStats:
    """Running mean and variance of one seed's observations (Chan et al.'s parallel update, as openai/baselines'
    ``RunningMeanStd``; the count starts at 1e-4 with mean 0 and variance 1)."""

    def __init__(self, dim: int):
        self.mean, self.var, self.count = np.zeros(dim, np.float64), np.ones(dim, np.float64), 1e-4

    def add(self, x: np.ndarray) -> None:
        delta, total = x - self.mean, self.count + 1.0
        self.mean = self.mean + delta / total
        self.var = (self.var * self.count + delta**2 * self.count / total) / total
        self.count = total


class Buffer:
    """The current rollout of every seed: [seeds, T, ...] arrays and the next free step."""

    def __init__(self, seeds: int, steps: int, obs_dim: int, action_dim: int):
        f = np.float32
        self.obs = np.zeros((seeds, steps, obs_dim), f)
        self.action, self.mean, self.std = (np.zeros((seeds, steps, action_dim), f) for _ in range(3))
        self.log_prob, self.v_tm1, self.r_t, self.discount_t, self.continue_t, self.v_t = (
            np.zeros((seeds, steps), f) for _ in range(6)
        )
        self.pos = 0


class HostState(SeedEnvs):
    """Environments, raw current observations, observation statistics, the rollout and the episode returns."""

    def __init__(self, envs: list[MujocoHostEnv], obs: np.ndarray, buffer: Buffer):
        super().__init__(envs, obs)
        self.buffer = buffer
        self.stats = [RunningStats(obs.shape[1]) for _ in envs]
        for stats, o in zip(self.stats, obs):
            stats.add(o)
        self.last_update: tuple[np.ndarray, ...] | None = None  # the last update's metrics, per seed


PPOState = LockstepState  # (learner, keys, pending None, host)


class ChunkMetrics(NamedTuple):
    """Per seed over the chunk: episodes and their mean return; the metrics of the chunk's updates (of the last
    one before it when the chunk held none; NaN before the first): policy and value loss, the fraction of clipped
    ratios, D_KL(pi_old || pi_new) over the rollout, the policy's mean std and the policy learning rate eta(t)."""

    frames: np.ndarray
    episodes: np.ndarray
    mean_return: np.ndarray
    policy_loss: np.ndarray
    value_loss: np.ndarray
    clip_fraction: np.ndarray
    kl: np.ndarray
    std: np.ndarray
    learning_rate: np.ndarray


def _act(config: PPOConfig, action_dim: int, learner: plearner.LearnerState, obs: jax.Array, key: jax.Array):
    key, act_key = jax.random.split(key)
    return act(config, action_dim, learner.policy_params, learner.value_params, obs, act_key), key


def _update(config: PPOConfig, action_dim: int, learner, traj, key, policy_lr, value_lr):
    key, update_key = jax.random.split(key)
    learner, metrics = plearner.update(config, action_dim, learner, traj, update_key, policy_lr, value_lr)
    return learner, metrics, key


class HostPPO(LockstepHost):
    """A compiled PPO for one task: ``init`` a batch of seeds, ``run`` steps, read metrics."""

    def __init__(self, config: PPOConfig, env_spec: Any):
        self.obs_dim, self.action_dim, self.max_episode_steps, self.action_scale = task_shape(env_spec)
        self.config, self.env_spec = config, env_spec
        dims = (config, self.action_dim)
        self._init = jax.jit(jax.vmap(lambda k: plearner.init(config, k, self.obs_dim, self.action_dim)))
        self._act = jax.jit(jax.vmap(functools.partial(_act, *dims)))
        self._update = jax.jit(jax.vmap(functools.partial(_update, *dims), in_axes=(0, 0, 0, None, None)))
        value = plearner.make_value(config)
        self._values = jax.jit(jax.vmap(lambda learner, obs: value.apply(learner.value_params, obs)))

    def init(self, seeds: list[int]) -> PPOState:
        net_keys, run_keys = split_seed_keys(seeds)
        envs = [MujocoHostEnv(self.env_spec, seed=s) for s in seeds]
        obs = np.stack([env.reset() for env in envs])
        buffer = Buffer(len(seeds), self.config.rollout_steps, self.obs_dim, self.action_dim)
        return PPOState(self._init(net_keys), run_keys, None, HostState(envs, obs, buffer))

    def standardise(self, host: HostState, obs: np.ndarray) -> np.ndarray:
        """Observations as the networks see them: standardised with each seed's running statistics and clipped."""
        if not self.config.obs_normalization:
            return obs.astype(np.float32)
        mean = np.stack([s.mean for s in host.stats])
        std = np.sqrt(np.stack([s.var for s in host.stats]) + 1e-8)
        return np.clip((obs - mean) / std, -self.config.obs_clip, self.config.obs_clip).astype(np.float32)

    def _advance(self, state: PPOState) -> tuple[PPOState, tuple[np.ndarray, ...] | None]:
        """One environment step of every seed, and an update when the rollout is full (its metrics, else None)."""
        host, learner, keys = state.host, state.learner, state.keys
        obs = self.standardise(host, host.obs)
        action, keys = self._act(learner, obs, keys)
        self._record(host, obs, action, learner)
        if host.buffer.pos != self.config.rollout_steps:
            return PPOState(learner, keys, None, host), None
        learner, keys = self._learn(host, learner, keys)
        return PPOState(learner, keys, None, host), host.last_update

    def _record(self, host: HostState, obs: np.ndarray, pending: Any, learner: Any) -> None:
        """Step every seed's environment and record the transition; truncations get V(final observation)."""
        action, log_prob, mean, std, v = (np.asarray(x) for x in pending)
        b, k, gamma = host.buffer, host.buffer.pos, self.config.discount
        truncated_obs: dict[int, np.ndarray] = {}
        for i in range(len(host.envs)):
            final_obs, reward, terminated, truncated, next_obs = host.step_env(i, action[i] * self.action_scale)
            b.obs[i, k], b.action[i, k], b.log_prob[i, k], b.mean[i, k], b.std[i, k] = obs[i], action[i], log_prob[i], mean[i], std[i]
            b.v_tm1[i, k], b.r_t[i, k] = v[i], reward
            b.discount_t[i, k] = 0.0 if terminated else gamma
            b.continue_t[i, k] = 0.0 if (terminated or truncated) else 1.0
            b.v_t[i, k] = 0.0
            if truncated and not terminated:
                truncated_obs[i] = final_obs
            host.obs[i] = next_obs
            if self.config.obs_normalization:
                host.stats[i].add(next_obs)
        if truncated_obs:
            final = host.obs.copy()
            for i, o in truncated_obs.items():
                final[i] = o
            values = np.asarray(self._values(learner, self.standardise(host, final)))
            for i in truncated_obs:
                b.v_t[i, k] = values[i]
        if k > 0:  # the previous step's next state is this step's state, unless its episode ended there
            inside = b.continue_t[:, k - 1] > 0
            b.v_t[inside, k - 1] = b.v_tm1[inside, k]
        b.pos += 1
        host.steps += 1

    def _learn(self, host: HostState, learner: Any, keys: jax.Array) -> tuple[Any, jax.Array]:
        """The rollout is full: bootstrap its last step from V(current state), update every seed, start anew."""
        b, c = host.buffer, self.config
        last = b.pos - 1
        inside = b.continue_t[:, last] > 0
        values = np.asarray(self._values(learner, self.standardise(host, host.obs)))
        b.v_t[inside, last] = values[inside]
        traj = plearner.Trajectory(b.obs, b.action, b.log_prob, b.mean, b.std, b.v_tm1, b.r_t, b.discount_t, b.continue_t, b.v_t)
        policy_lr = float(learning_rate_schedule(host.steps, c.policy_learning_rate, c.anneal_a))
        value_lr = float(learning_rate_schedule(host.steps, c.value_learning_rate, c.anneal_a))
        learner, metrics, keys = self._update(learner, traj, keys, policy_lr, value_lr)
        host.last_update = (*(np.asarray(m, np.float64) for m in metrics), np.full(len(host.envs), policy_lr))
        b.pos = 0
        return learner, keys

    def _metrics(self, state: PPOState, mark: list[int], updates: list[tuple[np.ndarray, ...]]) -> ChunkMetrics:
        host, n = state.host, len(state.host.envs)
        if updates:
            values = [np.mean(np.stack([u[j] for u in updates]), axis=0) for j in range(6)]
        elif host.last_update is not None:
            values = list(host.last_update)
        else:
            values = [np.full(n, np.nan) for _ in range(6)]
        return ChunkMetrics(**episode_fields(host, mark, self.env_spec.frames_per_step), **dict(zip(ChunkMetrics._fields[3:], values)))
