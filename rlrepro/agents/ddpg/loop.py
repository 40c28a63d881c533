"""The host DDPG + ReF-ER loop (Alg. 1 with Alg. 4): the shared ReF-ER host loop with DDPG's update.

``TransitionHost`` does the stepping, the episode memory (uniform or rank-based prioritised), the state/reward
scaling, beta, the exploration (Gaussian with ReF-ER, Ornstein-Uhlenbeck with ER and PER) and the metrics; this
module compiles DDPG's functions: one update of critic and policy with soft targets, and m_w(s) for acting.
"""

from __future__ import annotations

import functools
from typing import Any

import jax

from rlrepro.agents.ddpg import learner as dlearner
from rlrepro.agents.ddpg.config import DDPGConfig
from rlrepro.agents.ddpg.networks import PolicyNetwork
from rlrepro.training.refer_host import TransitionHost


def _update_and_mean(config: DDPGConfig, action_dim: int, state, batch, beta, c_max, lr_scale, obs):
    state, out = dlearner.update(config, action_dim, state, batch, beta, c_max, lr_scale)
    return state, out, PolicyNetwork(config.hidden_sizes, action_dim).apply(state.policy, obs)


class HostDDPG(TransitionHost):
    """A compiled DDPG for one task: ``init`` a batch of seeds, ``run`` steps, read metrics."""

    def _compile(self) -> None:
        config, dims = self.config, (self.config, self.action_dim)
        self._init = jax.jit(jax.vmap(lambda k: dlearner.init(config, k, self.obs_dim, self.action_dim)))
        self._step = jax.jit(jax.vmap(functools.partial(_update_and_mean, *dims), in_axes=(0, 0, 0, None, None, 0)))
        self._mean = jax.jit(jax.vmap(PolicyNetwork(config.hidden_sizes, self.action_dim).apply))

    def _acting_params(self, learner: Any) -> Any:
        """The parameters ``self._mean`` reads (DDPG: the policy network's)."""
        return learner.policy
