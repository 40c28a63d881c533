"""ACER's behaviour: a ~ N(m(s), diag(std^2)) truncated at +-``truncation`` std (ReF-ER App. A, every agent); the
environment gets a (upper - lower)/2 (App. B). The behaviour's statistics mu = (mean, std) are stored with the step."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax

from rlrepro.agents.acer.config import ACERConfig
from rlrepro.agents.acer.learner import make_policy


class Action(NamedTuple):
    """The action in network units and the behaviour statistics stored with it."""

    action: jax.Array
    mean: jax.Array
    std: jax.Array


def act(config: ACERConfig, action_dim: int, policy_params: Any, obs: jax.Array, key: jax.Array) -> Action:
    """One action for one standardised observation."""
    mean, std = make_policy(config, action_dim).apply(policy_params, obs)
    noise = jax.random.truncated_normal(key, -config.truncation, config.truncation, mean.shape)
    return Action(mean + std * noise, mean, std)
