"""The host NAF + ReF-ER loop: the shared ReF-ER host loop for stored transitions (``TransitionHost``: Gaussian
exploration around m(s), uniform or rank-based prioritised sampling, beta) with NAF's single-network update."""

from __future__ import annotations

import functools
from typing import Any

import jax

from rlrepro.agents.naf import learner as nlearner
from rlrepro.agents.naf.config import NAFConfig
from rlrepro.agents.naf.networks import NAFNetwork
from rlrepro.training.refer_host import TransitionHost


def _update_and_mean(config: NAFConfig, action_dim: int, state, batch, beta, c_max, lr_scale, obs):
    state, out = nlearner.update(config, action_dim, state, batch, beta, c_max, lr_scale)
    return state, out, NAFNetwork(config.hidden_sizes, action_dim).apply(state.params, obs)[1]


class HostNAF(TransitionHost):
    """A compiled NAF for one task: ``init`` a batch of seeds, ``run`` steps, read metrics."""

    def _compile(self) -> None:
        config, dims = self.config, (self.config, self.action_dim)
        self._init = jax.jit(jax.vmap(lambda k: nlearner.init(config, k, self.obs_dim, self.action_dim)))
        self._step = jax.jit(jax.vmap(functools.partial(_update_and_mean, *dims), in_axes=(0, 0, 0, None, None, 0)))
        network = NAFNetwork(config.hidden_sizes, self.action_dim)
        self._mean = jax.jit(jax.vmap(lambda params, obs: network.apply(params, obs)[1]))

    def _acting_params(self, learner: Any) -> Any:
        """The parameters ``self._mean`` reads (NAF: its one network's)."""
        return learner.params
