"""Data collection for FRODO: B pure-JAX environments stepped in lock-step inside the jitted meta-update.

Control uses IMPALA's synchronous actor (``rlrepro.training.unroll.unroll``): the agent acts on-policy
with the parameters of the current inner step. Prediction (the random walk) has no policy: the environment
moves by itself (``rlrepro.training.unroll.make_prediction_collect``). The Monte Carlo outer loss (Catch, §4) needs complete episodes: ``fresh_episodes`` resets
B environments and runs them for the episode length.
"""

from __future__ import annotations

from typing import Any

import jax

from rlrepro.environments.base import JaxEnv
from rlrepro.training.unroll import ActorState, Collect, EpisodeStats, Params, Trajectory, init_actor, to_trajectory, unroll


def make_control_collect(env: JaxEnv, network: Any, unroll_length: int, discount: float) -> Collect:
    """Continue the B environments of the carry (an ``ActorState``) for ``unroll_length`` steps with ``params``."""

    def collect(key: jax.Array, params: Params, carry: ActorState) -> tuple[ActorState, Trajectory, EpisodeStats]:
        carry, batch, stats = unroll(key, params, carry, env=env, network=network, unroll_length=unroll_length)
        return carry, to_trajectory(batch, discount), stats

    return collect


def make_fresh_episodes_collect(
    env: JaxEnv, network: Any, episode_length: int, batch_size: int, discount: float
) -> Collect:
    """Reset B environments and run them ``episode_length`` steps; the carry passes through unchanged."""

    def collect(key: jax.Array, params: Params, carry: Any) -> tuple[Any, Trajectory, EpisodeStats]:
        reset_key, unroll_key = jax.random.split(key)
        fresh = init_actor(reset_key, env, batch_size)
        _, batch, stats = unroll(unroll_key, params, fresh, env=env, network=network, unroll_length=episode_length)
        return carry, to_trajectory(batch, discount), stats

    return collect
