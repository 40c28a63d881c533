"""V-RACER's behaviour (App. A-B): a ~ N(m(s), diag(std^2)) truncated at +-3 std; the env gets a (upper - lower)/2."""

from __future__ import annotations

from typing import Any

import jax

from rlrepro.agents.vracer.config import VRacerConfig
from rlrepro.agents.vracer.networks import VRacerNetwork
from rlrepro.training.refer_host import Action


def act(config: VRacerConfig, action_dim: int, params: Any, obs: jax.Array, key: jax.Array) -> Action:
    """One action for one standardised observation (out-of-range draws resampled: a truncated normal)."""
    v, mean, std = VRacerNetwork(config.hidden_sizes, action_dim, config.init_std).apply(params, obs)
    noise = jax.random.truncated_normal(key, -config.truncation, config.truncation, mean.shape)
    return Action(mean + std * noise, mean, std, v)
