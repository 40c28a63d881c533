"""The host DDPG + ReF-ER loop (Alg. 1 with Alg. 4): the V-RACER host loop with DDPG's update and exploration.

It shares the environment stepping, the episode memory, the state/reward scaling, beta and the metrics with
``HostVRacer``; what differs: the update (critic and policy, soft targets), Q-learning targets from stored
transitions instead of Retrace (so the periodic refresh only updates the reward scale), and the exploration:
m_w(s) plus Gaussian N(0, sigma^2 I) noise (ReF-ER variants) or an Ornstein-Uhlenbeck process (ER; reset at
every episode start), drawn on the host from a generator per seed.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.agents.ddpg import learner as dlearner
from rlrepro.agents.ddpg.config import DDPGConfig
from rlrepro.agents.ddpg.networks import PolicyNetwork
from rlrepro.agents.refer.replay import EpisodeReplay, state_statistics
from rlrepro.agents.refer.rules import initial_beta, next_beta, step_schedules
from rlrepro.agents.vracer.actor import Action
from rlrepro.agents.vracer.trainer import HostState, HostVRacer, VRacerState
from rlrepro.environments.mujoco import MujocoHostEnv


def _update_and_mean(config: DDPGConfig, action_dim: int, state, batch, beta, c_max, lr_scale, obs):
    state, out = dlearner.update(config, action_dim, state, batch, beta, c_max, lr_scale)
    return state, out, PolicyNetwork(config.hidden_sizes, action_dim).apply(state.policy, obs)


class HostDDPG(HostVRacer):
    """A compiled DDPG for one task: ``init`` a batch of seeds, ``run`` steps, read metrics."""

    def __init__(self, config: DDPGConfig, env_spec: Any):  # noqa: D107 (the parent's probing, DDPG's functions)
        probe = MujocoHostEnv(env_spec, 0)
        self.obs_dim, self.action_dim = int(probe.reset().shape[0]), probe.action_dim
        self.max_episode_steps = int(env_spec.max_episode_steps or probe._env.spec.max_episode_steps)
        self.action_scale = (probe.action_high - probe.action_low) / 2.0
        self.config, self.env_spec = config, env_spec
        dims = (config, self.action_dim)
        self._init = jax.jit(jax.vmap(lambda k: dlearner.init(config, k, self.obs_dim, self.action_dim)))
        self._step = jax.jit(jax.vmap(functools.partial(_update_and_mean, *dims), in_axes=(0, 0, 0, None, None, 0)))
        network = PolicyNetwork(config.hidden_sizes, self.action_dim)
        self._mean = jax.jit(jax.vmap(network.apply))

    def init(self, seeds: list[int]) -> VRacerState:
        keys = jnp.stack([jax.random.key_data(jax.random.key(s)) for s in seeds])
        learner = self._init(keys)
        envs = [MujocoHostEnv(self.env_spec, seed=s) for s in seeds]
        obs = np.stack([env.reset() for env in envs])
        c = self.config
        replays = [
            EpisodeReplay(c.capacity, self.max_episode_steps, self.obs_dim, self.action_dim, c.discount, s + 1_000_003)
            for s in seeds
        ]
        host = HostState(envs, replays, obs, initial_beta(c.rules, len(seeds)))
        host.noise_rngs = [np.random.default_rng(s + 2_000_003) for s in seeds]
        host.ou = np.zeros((len(seeds), self.action_dim), np.float32)
        pending = self._explore(host, np.asarray(self._mean(self._acting_params(learner), self._standardise(host, obs))))
        return VRacerState(learner, keys, pending, host)

    def _acting_params(self, learner: Any) -> Any:
        """The parameters ``self._mean`` reads (DDPG: the policy network's)."""
        return learner.policy

    def _explore(self, host: HostState, mean: np.ndarray) -> Action:
        """m_w(s) + Gaussian or OU noise (App. A); mu = N(m_w(s), sigma^2 I) is what rho and the KL compare with."""
        c = self.config
        noise = np.stack([rng.standard_normal(self.action_dim) for rng in host.noise_rngs]).astype(np.float32)
        if c.exploration == "ornstein_uhlenbeck":  # dx = -theta x + sigma dW, unit time step
            host.ou = (1.0 - c.ou_theta) * host.ou + c.sigma * noise
            noise = host.ou
        else:
            noise = c.sigma * noise
        sigma = np.full_like(mean, c.sigma)
        return Action(mean + noise, mean, sigma, np.zeros(len(mean), np.float32))

    def _learn_and_act(self, host: HostState, learner, keys):
        c, t = self.config, host.steps
        obs = self._standardise(host, host.obs)
        if t < c.n_start:
            return learner, keys, self._explore(host, np.asarray(self._mean(self._acting_params(learner), obs))), None
        if t == c.n_start:
            for i, replay in enumerate(host.replays):
                host.obs_mean[i], host.obs_inv_std[i] = state_statistics(replay.observations())
            obs = self._standardise(host, host.obs)
        c_max, _ = step_schedules(c.rules, t, 1.0)
        if (t - c.n_start) % c.refresh_period == 0:
            for replay in host.replays:
                replay.update_reward_scale()
                replay.recount_far(c_max)
        lr_scale = 1.0 / (1.0 + c.rules.a * t) if c.anneal_learning_rate else 1.0
        samples = [replay.sample(c.batch_size) for replay in host.replays]
        moves = [replay.transitions(s.index) for replay, s in zip(host.replays, samples)]
        batch = dlearner.Batch(
            obs=np.stack([(s.obs - host.obs_mean[i]) * host.obs_inv_std[i] for i, s in enumerate(samples)]),
            action=np.stack([s.action for s in samples]),
            reward=np.stack([m[0] for m in moves]),
            discount=np.stack([m[1] for m in moves]),
            next_obs=np.stack([(m[2] - host.obs_mean[i]) * host.obs_inv_std[i] for i, m in enumerate(moves)]),
            mu_mean=np.stack([s.mu_mean for s in samples]),
        )
        learner, out, mean = self._step(learner, batch, jnp.asarray(host.beta), c_max, lr_scale, obs)
        log_rho = np.asarray(out.log_rho)
        far = np.empty(len(host.replays), np.float32)
        for i, (replay, s) in enumerate(zip(host.replays, samples)):
            replay.set_log_rho(s.index, log_rho[i], c_max)
            far[i] = replay.far_fraction()
        eta = c.policy_learning_rate * lr_scale
        host.beta = next_beta(c.rules, host.beta, far, eta)
        return learner, keys, self._explore(host, np.asarray(mean)), (out.critic_loss, out.kl, out.near, far, host.beta.copy(), c_max, eta)

    def _end_episodes(self, host: HostState, ended: list[tuple[int, np.ndarray, bool]], learner: Any) -> None:
        """Commit ended episodes (Q-learning targets need s_T, not V(s_T)); restart their OU processes."""
        for i, obs, terminated in ended:
            host.replays[i].end_episode(obs, terminated, 0.0)
            host.ou[i] = 0.0
