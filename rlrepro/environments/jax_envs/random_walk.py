"""The non-stationary 5-state random walk of FRODO (Xu et al. 2020, §4, Fig. 1b/2b, App. A.1) in pure JAX."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from rlrepro.environments.base import TimeStep


class RandomWalkState(NamedTuple):
    """Position (0..n-1, int32) and the number of steps taken since the start of the run (int32, never reset)."""

    position: jax.Array
    total_steps: jax.Array


@dataclasses.dataclass(frozen=True)
class RandomWalk:
    """Sutton & Barto's random walk with a left terminal reward that switches every ``switch_every`` steps.

    ``num_states`` non-terminal states (A..E for 5), start in the centre, move left or right with
    probability 1/2 whatever the action (a prediction task: ``num_actions`` is 1), terminate on stepping
    off either end. Stepping off the right end gives ``right_reward`` (+1); stepping off the left end
    gives ``left_rewards[k % len(left_rewards)]``, where k = (steps taken since the start of the run,
    before this step) // ``switch_every``. FRODO: right +1, left 0 <-> -1 every 960 steps ("10 iterations
    of FRODO"); the text once says "from 0 to 1", resolved to 0 <-> -1 (notes, ambiguity 6).
    The step counter runs across episodes (episodes auto-reset in the same step). Observation: one-hot
    position, float32 [num_states]. With discount 1 the true values are linear between the two terminal
    rewards (``true_values``).
    """

    num_states: int = 5
    switch_every: int = 960
    left_rewards: tuple[float, ...] = (0.0, -1.0)
    right_reward: float = 1.0
    prediction_only: bool = dataclasses.field(default=True, init=False, repr=False)  # no actions: a prediction task

    def __post_init__(self) -> None:
        if self.num_states < 1 or self.num_states % 2 == 0:
            raise ValueError(f"RandomWalk needs an odd num_states >= 1 (a centre start), got {self.num_states}")
        if self.switch_every < 1:
            raise ValueError(f"switch_every must be >= 1, got {self.switch_every}")
        if not self.left_rewards:
            raise ValueError("left_rewards must not be empty")
        object.__setattr__(self, "left_rewards", tuple(float(r) for r in self.left_rewards))

    @property
    def num_actions(self) -> int:
        return 1

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (self.num_states,)

    def reset(self, key: jax.Array) -> tuple[RandomWalkState, TimeStep]:
        """Start in the centre state at step 0 of the run."""
        del key
        state = RandomWalkState(jnp.asarray(self.num_states // 2, jnp.int32), jnp.zeros((), jnp.int32))
        return state, TimeStep(self._observe(state.position), jnp.zeros((), jnp.float32),
                               jnp.zeros((), jnp.bool_), jnp.zeros((), jnp.bool_))

    def step(self, key: jax.Array, state: RandomWalkState, action: ArrayLike) -> tuple[RandomWalkState, TimeStep]:
        """Move left or right at random; off an end: terminal reward, and the next episode starts in the centre."""
        del action
        move = jnp.where(jax.random.bernoulli(key), 1, -1).astype(jnp.int32)
        position = state.position + move
        off_left, off_right = position < 0, position >= self.num_states
        terminated = off_left | off_right
        reward = jnp.where(off_right, self.right_reward, jnp.where(off_left, self.left_reward(state), 0.0))
        position = jnp.where(terminated, self.num_states // 2, position).astype(jnp.int32)
        next_state = RandomWalkState(position, state.total_steps + 1)
        timestep = TimeStep(self._observe(position), reward.astype(jnp.float32), terminated, jnp.zeros((), jnp.bool_))
        return next_state, timestep

    def left_reward(self, state: RandomWalkState) -> jax.Array:
        """The left terminal reward in force at ``state`` (its phase: total_steps // switch_every)."""
        phase = (state.total_steps // self.switch_every) % len(self.left_rewards)
        return jnp.asarray(self.left_rewards, jnp.float32)[phase]

    def phase(self, state: RandomWalkState) -> jax.Array:
        """Index of the switching period the next step belongs to (total_steps // switch_every)."""
        return state.total_steps // self.switch_every

    def true_values(self, state: RandomWalkState) -> jax.Array:
        """Expected undiscounted return from each state under the left reward in force: [num_states].

        With gamma = 1 the value is linear in the position: v(i) = l + (r - l) (i + 1) / (n + 1); for
        l = 0, r = 1: (1/6 .. 5/6); for l = -1: (-2/3 .. 2/3) (notes §2.2).
        """
        left = self.left_reward(state)
        fraction = jnp.arange(1, self.num_states + 1, dtype=jnp.float32) / (self.num_states + 1)
        return left + (self.right_reward - left) * fraction

    def all_observations(self) -> jax.Array:
        """The observation of every state, [num_states, num_states] (for the value error over states)."""
        return jnp.eye(self.num_states, dtype=jnp.float32)

    def _observe(self, position: jax.Array) -> jax.Array:
        return jax.nn.one_hot(position, self.num_states, dtype=jnp.float32)
