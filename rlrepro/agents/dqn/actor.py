"""Epsilon-greedy acting with a linear epsilon schedule (App. B)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from rlrepro.agents.dqn.config import DQNConfig


def epsilon(step: ArrayLike, config: DQNConfig) -> jax.Array:
    """Linear decay from ``epsilon_start`` to ``epsilon_end`` over ``epsilon_decay_steps`` environment steps."""
    frac = jnp.clip(jnp.asarray(step, jnp.float32) / max(config.epsilon_decay_steps, 1), 0.0, 1.0)
    return config.epsilon_start + frac * (config.epsilon_end - config.epsilon_start)


def epsilon_greedy(key: jax.Array, q_values: jax.Array, eps: ArrayLike) -> jax.Array:
    """One action per row of ``q_values`` [N, A]: uniform with probability ``eps``, greedy otherwise."""
    explore_key, action_key = jax.random.split(key)
    n, num_actions = q_values.shape
    random_actions = jax.random.randint(action_key, (n,), 0, num_actions)
    explore = jax.random.uniform(explore_key, (n,)) < eps
    return jnp.where(explore, random_actions, jnp.argmax(q_values, axis=-1)).astype(jnp.int32)
