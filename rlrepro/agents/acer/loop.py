"""The host ACER loop: every seed of a job steps its MuJoCo task in lockstep; once N_start steps are stored, one
jitted call vmapped over seeds makes every seed's gradient step (one per environment step, ReF-ER App. A) and
chooses its next action with the new policy.

Per step: the pending actions are scaled by (upper - lower)/2 and stepped; each step enters the seed's episode
memory (``EpisodeReplay``: whole episodes, FIFO, committed when they end, with the final observation and whether
the episode terminated); at step N_start the state standardisation of App. B (eqs. 14-15) is taken from the stored
states, and the reward scale (eq. 16) then and every ``refresh_period`` steps; each gradient samples
``batch_episodes`` windows (``sample_windows``).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import numpy as np

from rlrepro.agents.acer import learner as alearner
from rlrepro.agents.acer.actor import Action, act
from rlrepro.agents.acer.config import ACERConfig
from rlrepro.agents.acer.memory import sample_windows
from rlrepro.replay.episodes import EpisodeReplay, state_statistics
from rlrepro.environments.mujoco import MujocoHostEnv, task_shape
from rlrepro.losses.refer import learning_rate_schedule
from rlrepro.training.lockstep import LockstepHost, LockstepState, SeedEnvs, episode_fields, split_seed_keys


class HostState(SeedEnvs):
    """Environments, memories, raw current observations, the state statistics and the episode returns."""

    def __init__(self, envs: list[MujocoHostEnv], replays: list[EpisodeReplay], obs: np.ndarray):
        super().__init__(envs, obs)
        self.replays = replays
        self.obs_mean = np.zeros((len(envs), obs.shape[1]), np.float32)
        self.obs_inv_std = np.ones((len(envs), obs.shape[1]), np.float32)
        self.updates = 0


ACERState = LockstepState  # (learner, keys, the actions chosen for the current observations with their mu, host)


class ChunkMetrics(NamedTuple):
    """Per seed over the chunk: episodes and their mean return; the means over the chunk's gradient steps (NaN
    before N_start) of the critic loss, D_KL(mu || pi) of the sampled steps (Fig. 5), min(c, rho), the fraction of
    steps whose trust-region constraint was active and the policy's std; the policy learning rate eta(t)."""

    frames: np.ndarray
    episodes: np.ndarray
    mean_return: np.ndarray
    critic_loss: np.ndarray
    kl: np.ndarray
    truncated_rho: np.ndarray
    trust_region_active: np.ndarray
    std: np.ndarray
    learning_rate: np.ndarray


def _act(config: ACERConfig, action_dim: int, learner: alearner.LearnerState, obs: jax.Array, key: jax.Array):
    key, act_key = jax.random.split(key)
    return act(config, action_dim, learner.policy_params, obs, act_key), key


def _update_and_act(config: ACERConfig, action_dim: int, learner, batch, obs, key, policy_lr, value_lr, advantage_lr):
    key, update_key, act_key = jax.random.split(key, 3)
    learner, metrics = alearner.update(config, action_dim, learner, batch, update_key, policy_lr, value_lr, advantage_lr)
    return learner, metrics, act(config, action_dim, learner.policy_params, obs, act_key), key


class HostACER(LockstepHost):
    """A compiled ACER for one task: ``init`` a batch of seeds, ``run`` steps, read metrics."""

    def __init__(self, config: ACERConfig, env_spec: Any):
        self.obs_dim, self.action_dim, self.max_episode_steps, self.action_scale = task_shape(env_spec)
        self.config, self.env_spec = config, env_spec
        dims = (config, self.action_dim)
        self._init = jax.jit(jax.vmap(lambda k: alearner.init(config, k, self.obs_dim, self.action_dim)))
        self._act = jax.jit(jax.vmap(functools.partial(_act, *dims)))
        self._step = jax.jit(jax.vmap(functools.partial(_update_and_act, *dims), in_axes=(0, 0, 0, 0, None, None, None)))

    def init(self, seeds: list[int]) -> ACERState:
        c = self.config
        net_keys, act_keys = split_seed_keys(seeds)
        envs = [MujocoHostEnv(self.env_spec, seed=s) for s in seeds]
        obs = np.stack([env.reset() for env in envs])
        replays = [
            EpisodeReplay(c.capacity, self.max_episode_steps, self.obs_dim, self.action_dim, c.discount, s + 1_000_003)
            for s in seeds
        ]
        host = HostState(envs, replays, obs)
        learner = self._init(net_keys)
        pending, act_keys = self._act(learner, self._standardise(host, host.obs), act_keys)
        return ACERState(learner, act_keys, pending, host)

    def _standardise(self, host: HostState, obs: np.ndarray) -> np.ndarray:
        return ((obs - host.obs_mean) * host.obs_inv_std).astype(np.float32)

    def _advance(self, state: ACERState) -> tuple[ACERState, tuple | None]:
        """One environment step of every seed, then (from N_start on) its gradient step and next action."""
        self._store_and_step(state.host, state.pending)
        learner, keys, pending, out = self._learn_and_act(state.host, state.learner, state.keys)
        return ACERState(learner, keys, pending, state.host), out

    def _store_and_step(self, host: HostState, pending: Action) -> None:
        action, mean, std = (np.asarray(x) for x in pending)
        for i in range(len(host.envs)):
            obs, reward, terminated, truncated, next_obs = host.step_env(i, action[i] * self.action_scale)
            host.replays[i].add(host.obs[i], action[i], reward, mean[i], std[i], 0.0)
            if terminated or truncated:
                host.replays[i].end_episode(obs, terminated, 0.0)  # ACER bootstraps from V(s_T) when it learns
            host.obs[i] = next_obs
        host.steps += 1

    def _learn_and_act(self, host: HostState, learner: Any, keys: jax.Array):
        c, t = self.config, host.steps
        if t == c.n_start:  # eqs. 14-15 from the first N_start states of every seed
            for i, replay in enumerate(host.replays):
                host.obs_mean[i], host.obs_inv_std[i] = state_statistics(replay.observations())
        obs = self._standardise(host, host.obs)
        if t < c.n_start or any(not replay.episodes for replay in host.replays):
            pending, keys = self._act(learner, obs, keys)
            return learner, keys, pending, None
        if (t - c.n_start) % c.refresh_period == 0:
            for replay in host.replays:
                replay.update_reward_scale()
        batch = self._batch(host)
        lrs = [float(learning_rate_schedule(t, lr, c.anneal_a))
               for lr in (c.policy_learning_rate, c.value_learning_rate, c.advantage_learning_rate)]
        learner, metrics, pending, keys = self._step(learner, batch, obs, keys, *lrs)
        host.updates += 1
        return learner, keys, pending, (*metrics, lrs[0])

    def _batch(self, host: HostState) -> alearner.Batch:
        """Every seed's windows, states standardised with the seed's statistics: [seeds, B, L, ...]."""
        c = self.config
        windows = [sample_windows(replay, c.batch_episodes, c.window) for replay in host.replays]
        for i, w in enumerate(windows):
            w["obs"] = (w["obs"] - host.obs_mean[i]) * host.obs_inv_std[i]
            w["next_obs"] = (w["next_obs"] - host.obs_mean[i]) * host.obs_inv_std[i]
        return alearner.Batch(**{name: np.stack([w[name] for w in windows]).astype(np.float32)
                                 for name in alearner.Batch._fields})

    def _metrics(self, state: ACERState, mark: list[int], outs: list) -> ChunkMetrics:
        host, n = state.host, len(state.host.envs)
        if outs:
            values = [np.mean(np.stack([np.asarray(o[j], np.float64) for o in outs]), axis=0) for j in range(5)]
            lr = np.full(n, outs[-1][5])
        else:
            values, lr = [np.full(n, np.nan) for _ in range(5)], np.full(n, np.nan)
        return ChunkMetrics(**episode_fields(host, mark, self.env_spec.frames_per_step),
                            **dict(zip(ChunkMetrics._fields[3:], [*values, lr])))
