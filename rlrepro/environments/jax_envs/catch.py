"""Catch (Mnih et al. 2014; bsuite; FRODO, Xu et al. 2020, §4 and App. A.1) as a pure-JAX environment."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from rlrepro.environments.base import TimeStep

NUM_ACTIONS = 3  # 0: left, 1: stay, 2: right


class CatchState(NamedTuple):
    """Positions on the grid (int32 scalars) and the number of steps taken in the current episode."""

    ball_row: jax.Array
    ball_column: jax.Array
    paddle_column: jax.Array
    step_count: jax.Array


@dataclasses.dataclass(frozen=True)
class Catch:
    """Catch: a ball falls one row per step from a random top-row column; the paddle must be under it.

    The paddle sits in the bottom row and starts in column ``columns // 2``; actions are
    {0: left, 1: stay, 2: right}, clipped at the walls. After ``rows - 1`` steps the ball reaches
    the bottom row and the episode terminates with reward +1 if the paddle is under the ball and
    -1 otherwise; every other step gives 0. The observation is a float32 ``(rows, columns)`` grid
    with 1.0 at the ball and at the paddle. ``step`` auto-resets in the same call (see ``base``).

    Default size 6 rows x 11 columns: FRODO (App. A.1) says "6 x 11" without saying which number
    is rows. We read it as 6 rows x 11 columns (FRODO notes, ambiguity 7): an odd width gives a
    true centre start, and with 11 rows x 6 columns a paddle that merely stays put would catch
    every ball with a 3-step look-ahead, contradicting the paper's premise. With this size the
    episode lasts 5 steps, the paddle can reach every column, and any policy blind to the ball
    catches with probability 1/11 (expected return -9/11).
    """

    rows: int = 6
    columns: int = 11

    def __post_init__(self) -> None:
        if self.rows < 2:
            raise ValueError(f"Catch needs rows >= 2 (a top row and a paddle row), got rows={self.rows}")
        if self.columns < 1:
            raise ValueError(f"Catch needs columns >= 1, got columns={self.columns}")

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (self.rows, self.columns)

    def reset(self, key: jax.Array) -> tuple[CatchState, TimeStep]:
        """Start an episode: ball in a uniformly random top-row column, paddle in the centre."""
        state = self._initial_state(key)
        timestep = TimeStep(
            observation=self._observe(state),
            reward=jnp.zeros((), jnp.float32),
            terminated=jnp.zeros((), jnp.bool_),
            truncated=jnp.zeros((), jnp.bool_),
        )
        return state, timestep

    def step(self, key: jax.Array, state: CatchState, action: ArrayLike) -> tuple[CatchState, TimeStep]:
        """Move the paddle, drop the ball one row; on the terminal step return the new episode's observation."""
        paddle_column = jnp.clip(state.paddle_column + jnp.asarray(action, jnp.int32) - 1, 0, self.columns - 1)
        ball_row = state.ball_row + 1
        terminated = ball_row == self.rows - 1
        caught = paddle_column == state.ball_column
        reward = jnp.where(terminated, jnp.where(caught, 1.0, -1.0), 0.0).astype(jnp.float32)
        next_state = CatchState(ball_row, state.ball_column, paddle_column, state.step_count + 1)
        fresh_state = self._initial_state(key)
        state = jax.tree.map(lambda fresh, old: jnp.where(terminated, fresh, old), fresh_state, next_state)
        timestep = TimeStep(
            observation=self._observe(state),
            reward=reward,
            terminated=terminated,
            truncated=jnp.zeros((), jnp.bool_),
        )
        return state, timestep

    def _initial_state(self, key: jax.Array) -> CatchState:
        return CatchState(
            ball_row=jnp.zeros((), jnp.int32),
            ball_column=jax.random.randint(key, (), 0, self.columns, dtype=jnp.int32),
            paddle_column=jnp.asarray(self.columns // 2, jnp.int32),
            step_count=jnp.zeros((), jnp.int32),
        )

    def _observe(self, state: CatchState) -> jax.Array:
        row = jnp.arange(self.rows)[:, None]
        column = jnp.arange(self.columns)[None, :]
        ball = (row == state.ball_row) & (column == state.ball_column)
        paddle = (row == self.rows - 1) & (column == state.paddle_column)
        return (ball | paddle).astype(jnp.float32)
