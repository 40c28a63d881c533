"""The host V-RACER + ReF-ER loop (Alg. 1): seeds stepped in lockstep, one jitted (vmapped) call per step.

Per environment step t (F = 1): once N_start steps are stored, every seed samples B stored steps uniformly,
takes one gradient step at eta(t) with beta and c_max(t), and chooses its next action with the new parameters,
all in one jitted call vmapped over seeds. The sampled steps' V and rho are written back with the local Q^ret
correction; beta follows eq. 12 from the far fraction of the memory. Every ``refresh_period`` steps the reward
scale (eq. 16) is recomputed and Q^ret with it, over the whole memory (``retrace_q_ret``). Episodes enter the
memory when they end: terminated ones bootstrap from 0, truncated ones from V(s_T).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.agents.refer.replay import EpisodeReplay, state_statistics
from rlrepro.agents.refer.rules import initial_beta, next_beta, step_schedules
from rlrepro.agents.vracer import learner as vlearner
from rlrepro.agents.vracer.actor import Action, act
from rlrepro.agents.vracer.config import VRacerConfig
from rlrepro.environments.mujoco import MujocoHostEnv
from rlrepro.losses.refer import retrace_q_ret


class HostState:
    """Environments, replay memories, current observations, beta and the state statistics of every seed."""

    def __init__(self, envs: list[MujocoHostEnv], replays: list[EpisodeReplay], obs: np.ndarray, beta: np.ndarray):
        self.envs, self.replays, self.obs, self.beta = envs, replays, obs, beta
        self.obs_mean = np.zeros((len(envs), obs.shape[1]), np.float32)
        self.obs_inv_std = np.ones((len(envs), obs.shape[1]), np.float32)
        self.running_return = np.zeros(len(envs), np.float64)
        self.episode_returns: list[list[float]] = [[] for _ in envs]
        self.steps = 0


class VRacerState(NamedTuple):
    learner: vlearner.LearnerState
    keys: jax.Array
    pending: Action  # the actions chosen for the current observations (with their mu and V)
    host: HostState


class ChunkMetrics(NamedTuple):
    """Per seed over the chunk: episodes and their mean return; the learner's mean loss, the minibatch KL(mu||pi)
    (an estimate of the memory's average D_KL, Figs. 2 and 5), the near fraction of minibatches; at the chunk's end:
    the far-policy fraction n_far/N of the memory, beta, c_max, eta and the reward scale."""

    frames: np.ndarray
    episodes: np.ndarray
    mean_return: np.ndarray
    loss: np.ndarray
    kl: np.ndarray
    near_fraction: np.ndarray
    far_fraction: np.ndarray
    beta: np.ndarray
    c_max: np.ndarray
    learning_rate: np.ndarray
    reward_scale: np.ndarray


def _update_and_act(config: VRacerConfig, action_dim: int, state, batch, beta, c_max, lr, obs, key):
    state, out = vlearner.update(config, action_dim, state, batch, beta, c_max, lr)
    key, act_key = jax.random.split(key)
    return state, out, act(config, action_dim, state.params, obs, act_key), key


def _act(config: VRacerConfig, action_dim: int, params, obs, key):
    key, act_key = jax.random.split(key)
    return act(config, action_dim, params, obs, act_key), key


class HostVRacer:
    """A compiled V-RACER for one task: ``init`` a batch of seeds, ``run`` steps, read metrics."""

    def __init__(self, config: VRacerConfig, env_spec: Any):
        probe = MujocoHostEnv(env_spec, 0)
        self.obs_dim, self.action_dim = int(probe.reset().shape[0]), probe.action_dim
        self.max_episode_steps = int(env_spec.max_episode_steps or probe._env.spec.max_episode_steps)
        # App. B: a' = a (upper - lower) / 2 (the env then clips to its box).
        self.action_scale = (probe.action_high - probe.action_low) / 2.0
        self.config, self.env_spec = config, env_spec
        dims = (config, self.action_dim)
        self._init = jax.jit(jax.vmap(lambda k: vlearner.init(config, k, self.obs_dim, self.action_dim)))
        self._step = jax.jit(jax.vmap(functools.partial(_update_and_act, *dims), in_axes=(0, 0, 0, None, None, 0, 0)))
        self._act = jax.jit(jax.vmap(functools.partial(_act, *dims)))
        self._refresh = jax.jit(jax.vmap(retrace_q_ret))
        network = vlearner.make_network(config, self.action_dim)
        self._values = jax.jit(jax.vmap(lambda params, obs: network.apply(params, obs)[0]))

    def init(self, seeds: list[int]) -> VRacerState:
        keys = jnp.stack([jax.random.key_data(jax.random.key(s)) for s in seeds])
        net_keys, act_keys = jax.vmap(lambda k: jax.random.split(k))(keys).transpose(1, 0, 2)
        learner = self._init(net_keys)
        envs = [MujocoHostEnv(self.env_spec, seed=s) for s in seeds]
        obs = np.stack([env.reset() for env in envs])
        c = self.config
        replays = [
            EpisodeReplay(c.capacity, self.max_episode_steps, self.obs_dim, self.action_dim, c.discount, s + 1_000_003)
            for s in seeds
        ]
        host = HostState(envs, replays, obs, initial_beta(c.rules, len(seeds)))
        pending, act_keys = self._act(learner.params, self._standardise(host, obs), act_keys)
        return VRacerState(learner, act_keys, pending, host)

    def _standardise(self, host: HostState, obs: np.ndarray) -> np.ndarray:
        return ((obs - host.obs_mean) * host.obs_inv_std).astype(np.float32)

    def run(self, state: VRacerState, steps: int) -> tuple[VRacerState, ChunkMetrics]:
        """``steps`` environment steps (and, after N_start, one update each) for every seed."""
        host, learner, keys, pending = state.host, state.learner, state.keys, state.pending
        first = [len(r) for r in host.episode_returns]
        outs = []
        for _ in range(steps):
            self._store_and_step(host, pending, learner)
            learner, keys, pending, out = self._learn_and_act(host, learner, keys)
            if out is not None:
                outs.append(out)
        return VRacerState(learner, keys, pending, host), self._metrics(host, first, outs)

    def _learn_and_act(self, host: HostState, learner, keys):
        c, t = self.config, host.steps
        obs = self._standardise(host, host.obs)
        c_max, eta = step_schedules(c.rules, t, c.learning_rate)
        if t < c.n_start:
            pending, keys = self._act(learner.params, obs, keys)
            return learner, keys, pending, None
        if t == c.n_start:  # eqs. 14-16 from the first N_start samples, then Q^ret in the new units
            for i, replay in enumerate(host.replays):
                host.obs_mean[i], host.obs_inv_std[i] = state_statistics(replay.observations())
            obs = self._standardise(host, host.obs)
            self._refresh_memory(host, c_max)
        elif (t - c.n_start) % c.refresh_period == 0:
            self._refresh_memory(host, c_max)
        samples = [replay.sample(c.batch_size) for replay in host.replays]
        batch = vlearner.Batch(
            obs=np.stack([(s.obs - host.obs_mean[i]) * host.obs_inv_std[i] for i, s in enumerate(samples)]),
            action=np.stack([s.action for s in samples]),
            mu_mean=np.stack([s.mu_mean for s in samples]),
            mu_std=np.stack([s.mu_std for s in samples]),
            q_ret=np.stack([s.q_ret for s in samples]),
        )
        learner, out, pending, keys = self._step(learner, batch, jnp.asarray(host.beta), c_max, eta, obs, keys)
        v, log_rho = np.asarray(out.v), np.asarray(out.log_rho)
        far = np.empty(len(host.replays), np.float32)
        for i, (replay, s) in enumerate(zip(host.replays, samples)):
            replay.write_back(s.index, v[i], log_rho[i], c_max)
            far[i] = replay.far_fraction()
        host.beta = next_beta(c.rules, host.beta, far, eta)
        return learner, keys, pending, (out.loss, out.kl, out.near, far, host.beta.copy(), c_max, eta)

    def _refresh_memory(self, host: HostState, c_max: float) -> None:
        """Reward scale (eq. 16), Q^ret of every stored step from the stored V and rho (eq. 8), and n_far recounted
        with the current c_max."""
        for replay in host.replays:
            replay.update_reward_scale()
            replay.recount_far(c_max)
        inputs = [np.stack(x) for x in zip(*(replay.refresh_inputs() for replay in host.replays))]
        q_ret = np.asarray(self._refresh(*inputs))
        for replay, q in zip(host.replays, q_ret):
            replay.set_q_ret(q)

    def _store_and_step(self, host: HostState, pending: Action, learner: Any) -> None:
        action, mean, std, v = (np.asarray(x) for x in pending)
        ended: list[tuple[int, np.ndarray, bool]] = []
        for i, env in enumerate(host.envs):
            obs, reward, terminated, truncated = env.step(action[i] * self.action_scale)
            host.replays[i].add(host.obs[i], action[i], reward, mean[i], std[i], v[i])
            host.running_return[i] += reward
            if terminated or truncated:
                ended.append((i, obs, terminated))
                host.episode_returns[i].append(float(host.running_return[i]))
                host.running_return[i] = 0.0
                obs = env.reset()
            host.obs[i] = obs
        if ended:
            self._end_episodes(host, ended, learner)
        host.steps += 1

    def _end_episodes(self, host: HostState, ended: list[tuple[int, np.ndarray, bool]], learner: Any) -> None:
        """Commit ended episodes; truncated ones need V(s_T) from the current network."""
        last_obs = host.obs.copy()
        for i, obs, _ in ended:
            last_obs[i] = obs
        v_last = np.zeros(len(host.envs), np.float32)
        if any(not terminated for _, _, terminated in ended):
            v_last = np.asarray(self._values(learner.params, self._standardise(host, last_obs)))
        for i, obs, terminated in ended:
            host.replays[i].end_episode(obs, terminated, float(v_last[i]))

    def _metrics(self, host: HostState, first: list[int], outs: list) -> ChunkMetrics:
        n = len(host.envs)
        new = [host.episode_returns[i][first[i]:] for i in range(n)]
        nan = np.full(n, np.nan)
        if outs:
            loss, kl, near = (np.mean(np.stack([np.asarray(o[j]) for o in outs]), axis=0) for j in range(3))
            far, beta, c_max, eta = outs[-1][3], outs[-1][4], np.full(n, outs[-1][5]), np.full(n, outs[-1][6])
        else:
            loss = kl = near = far = c_max = eta = nan
            beta = host.beta
        return ChunkMetrics(
            frames=np.full(n, host.steps * self.env_spec.frames_per_step, np.int64),
            episodes=np.array([len(r) for r in new]),
            mean_return=np.array([np.mean(r) if r else np.nan for r in new]),
            loss=loss, kl=kl, near_fraction=near, far_fraction=far, beta=np.asarray(beta, np.float64),
            c_max=c_max, learning_rate=eta,
            reward_scale=np.array([r.reward_scale for r in host.replays]),
        )
