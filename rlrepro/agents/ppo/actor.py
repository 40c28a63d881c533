"""PPO's behaviour: a ~ N(m(s), diag(std^2)) unbounded (the environment clips to its box after the scaling
a' = a (upper - lower)/2 that every agent of the ReF-ER paper uses, App. B), with log pi_old(a|s) and V(s)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax

from rlrepro.agents.ppo.config import PPOConfig
from rlrepro.agents.ppo.learner import make_policy, make_value
from rlrepro.losses.refer import gaussian_log_prob


class Action(NamedTuple):
    """The action (network units), its log-probability under the behaviour, the behaviour's statistics and V(s)."""

    action: jax.Array
    log_prob: jax.Array
    mean: jax.Array
    std: jax.Array
    v: jax.Array


def act(config: PPOConfig, action_dim: int, policy_params: Any, value_params: Any, obs: jax.Array, key: jax.Array) -> Action:
    """One action for one standardised observation."""
    mean, std = make_policy(config, action_dim).apply(policy_params, obs)
    action = mean + std * jax.random.normal(key, mean.shape)
    v = make_value(config).apply(value_params, obs)
    return Action(action, gaussian_log_prob(action, mean, std), mean, std, v)
