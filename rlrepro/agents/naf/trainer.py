"""The host NAF + ReF-ER loop: DDPG's host loop (stored transitions, Gaussian exploration around m(s), beta) with
NAF's single-network update."""

from __future__ import annotations

import functools
from typing import Any

import jax

from rlrepro.agents.ddpg.trainer import HostDDPG
from rlrepro.agents.naf import learner as nlearner
from rlrepro.agents.naf.config import NAFConfig
from rlrepro.agents.naf.networks import NAFNetwork
from rlrepro.environments.mujoco import MujocoHostEnv


def _update_and_mean(config: NAFConfig, action_dim: int, state, batch, beta, c_max, lr_scale, obs):
    state, out = nlearner.update(config, action_dim, state, batch, beta, c_max, lr_scale)
    return state, out, NAFNetwork(config.hidden_sizes, action_dim).apply(state.params, obs)[1]


class HostNAF(HostDDPG):
    """A compiled NAF for one task: ``init`` a batch of seeds, ``run`` steps, read metrics."""

    def __init__(self, config: NAFConfig, env_spec: Any):  # noqa: D107
        probe = MujocoHostEnv(env_spec, 0)
        self.obs_dim, self.action_dim = int(probe.reset().shape[0]), probe.action_dim
        self.max_episode_steps = int(env_spec.max_episode_steps or probe._env.spec.max_episode_steps)
        self.action_scale = (probe.action_high - probe.action_low) / 2.0
        self.config, self.env_spec = config, env_spec
        dims = (config, self.action_dim)
        self._init = jax.jit(jax.vmap(lambda k: nlearner.init(config, k, self.obs_dim, self.action_dim)))
        self._step = jax.jit(jax.vmap(functools.partial(_update_and_mean, *dims), in_axes=(0, 0, 0, None, None, 0)))
        network = NAFNetwork(config.hidden_sizes, self.action_dim)
        self._mean = jax.jit(jax.vmap(lambda params, obs: network.apply(params, obs)[1]))

    def _acting_params(self, learner: Any) -> Any:
        return learner.params
