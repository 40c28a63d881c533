"""The small interface every pure-JAX environment implements.

Conventions (dm_env-like, as IMPALA's released code expects):
- ``step`` auto-resets in the same call: when an episode ends at this step, ``reward`` and the
  ``terminated``/``truncated`` flags describe the last transition of the old episode, while
  ``observation`` is already the first observation of the new episode. There is therefore no
  dummy transition to mask (unlike gymnasium's next-step autoreset).
- ``terminated``: a true terminal state (value 0 beyond it). ``truncated``: a time limit. The
  next value is never available for a truncated step (the observation belongs to the next
  episode), so learners must cut their traces on either flag.
- Everything is a pure function of (key, state, action): jit- and vmap-able.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import jax


class TimeStep(NamedTuple):
    """What the environment returns from ``reset`` and ``step``."""

    observation: jax.Array
    reward: jax.Array  # float32 scalar
    terminated: jax.Array  # bool scalar
    truncated: jax.Array  # bool scalar


class TalliedTimeStep(NamedTuple):
    """``TimeStep`` plus ``tallies``: per-step amounts an actor sums over each episode (Key-to-Door's door opened,
    Catch's catches). An environment's ``events`` names the tallies that mark a step as an event (non-zero there)
    for the synthetic-return analysis: c(s) at those steps against all steps (paper Fig. 4c, 5c)."""

    observation: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    tallies: dict[str, jax.Array]


class JaxEnv(Protocol):
    """A pure-JAX environment with same-step auto-reset."""

    @property
    def num_actions(self) -> int: ...

    @property
    def observation_shape(self) -> tuple[int, ...]: ...

    def reset(self, key: jax.Array) -> tuple[Any, TimeStep]:
        """Start an episode. Returns (state, timestep) with reward 0 and both flags False."""
        ...

    def step(self, key: jax.Array, state: Any, action: jax.Array) -> tuple[Any, TimeStep]:
        """Advance one step; auto-resets in the same call when the episode ends."""
        ...
