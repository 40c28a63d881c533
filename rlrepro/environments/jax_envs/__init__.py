"""Pure-JAX environments (jit/vmap-able, same-step auto-reset) and a registry to build them by name."""

from __future__ import annotations

import inspect
from typing import Any

from rlrepro.environments.base import JaxEnv, TimeStep
from rlrepro.environments.jax_envs.cartpole import CartPole, CartPoleState
from rlrepro.environments.jax_envs.catch import Catch, CatchState
from rlrepro.environments.jax_envs.catch_runs import CatchRuns, CatchRunsState
from rlrepro.environments.jax_envs.chain import Chain, ChainState, ChainTimeStep
from rlrepro.environments.jax_envs.key_to_door import KeyToDoor, KeyToDoorState
from rlrepro.environments.jax_envs.random_walk import RandomWalk, RandomWalkState

__all__ = [
    "JAX_ENVS",
    "CartPole",
    "CartPoleState",
    "Catch",
    "CatchState",
    "CatchRuns",
    "CatchRunsState",
    "Chain",
    "ChainState",
    "ChainTimeStep",
    "JaxEnv",
    "KeyToDoor",
    "KeyToDoorState",
    "RandomWalk",
    "RandomWalkState",
    "TimeStep",
    "make_jax_env",
]

JAX_ENVS: dict[str, type] = {
    "catch": Catch,
    "cartpole": CartPole,
    "chain": Chain,
    "catch_runs": CatchRuns,
    "key_to_door": KeyToDoor,
    "random_walk": RandomWalk,
}


def make_jax_env(name: str, **kwargs: Any) -> JaxEnv:
    """Build the registered environment ``name`` with its keyword arguments.

    Raises:
      ValueError: ``name`` is not registered (the message lists the known names).
      TypeError: a keyword argument is not a parameter of that environment (all are named).
    """
    if name not in JAX_ENVS:
        raise ValueError(f"unknown JAX environment {name!r}; known: {', '.join(sorted(JAX_ENVS))}")
    env_class = JAX_ENVS[name]
    accepted = inspect.signature(env_class).parameters
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise TypeError(
            f"unknown argument(s) for JAX environment {name!r}: {', '.join(unknown)}; "
            f"accepted: {', '.join(accepted) or 'none'}"
        )
    return env_class(**kwargs)
