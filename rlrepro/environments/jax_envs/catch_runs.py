"""Catch with several runs per episode and its delayed variant (Raposo et al. 2021, §3.2, Fig. 4, Suppl. Fig. 7)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from rlrepro.environments.base import TalliedTimeStep

NUM_ACTIONS = 3  # 0: left, 1: stay, 2: right (a "stay" action: notes ambiguity 4, as pomdp-baselines)


class CatchRunsState(NamedTuple):
    """Ball position, paddle column, steps taken in the episode and catches so far (int32 scalars)."""

    ball_row: jax.Array
    ball_column: jax.Array
    paddle_column: jax.Array
    step_count: jax.Array
    catches: jax.Array


@dataclasses.dataclass(frozen=True)
class CatchRuns:
    """A ``size`` x ``size`` Catch whose episode is ``runs`` consecutive balls (paper: 7x7, 20 runs; 5/10/20/40).

    Each run a ball appears in a uniformly random column of the top row and falls one row per step; after
    ``size - 1`` steps it reaches the paddle's row and is caught if the paddle is under it; the next ball
    appears at once. The paddle (bottom row, starting in the centre) keeps its column across runs. An
    episode lasts ``runs * (size - 1)`` steps (ours; pomdp-baselines' DelayedCatch uses 7 per run).
    Standard: +1 at each catch, a miss pays 0. ``delayed``: nothing until the episode's last step, which pays
    the number of catches (e.g. 7 of 20 -> +7). Observation: float32 ``(size, size)`` grid, 1 at ball and paddle.
    Tallies: ``caught`` and ``missed`` (0/1 on the step a ball lands), whatever the reward says (delayed or not).
    """

    size: int = 7
    runs: int = 20
    delayed: bool = False

    def __post_init__(self) -> None:
        if self.size < 3 or self.runs < 1:
            raise ValueError(f"invalid CatchRuns: size must be >= 3 and runs >= 1, got size={self.size}, runs={self.runs}")

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (self.size, self.size)

    @property
    def events(self) -> tuple[str, ...]:
        """The tallies whose steps the synthetic-return analysis marks (Fig. 4c: catches and misses)."""
        return ("caught", "missed")

    @property
    def episode_length(self) -> int:
        return self.runs * (self.size - 1)

    def reset(self, key: jax.Array) -> tuple[CatchRunsState, TalliedTimeStep]:
        """A new episode: the first ball in a random top-row column, the paddle in the centre."""
        state = self._initial_state(key)
        zero = jnp.zeros((), jnp.float32)
        tallies = {name: zero for name in self.events}
        return state, TalliedTimeStep(self._observe(state), zero, jnp.zeros((), bool), jnp.zeros((), bool), tallies)

    def step(self, key: jax.Array, state: CatchRunsState, action: ArrayLike) -> tuple[CatchRunsState, TalliedTimeStep]:
        """Move the paddle, drop the ball; at the bottom judge the catch and drop a new ball (or end the episode)."""
        ball_key, reset_key = jax.random.split(key)
        paddle = jnp.clip(state.paddle_column + jnp.asarray(action, jnp.int32) - 1, 0, self.size - 1)
        ball_row = state.ball_row + 1
        landed = ball_row == self.size - 1
        caught = landed & (paddle == state.ball_column)
        catches = state.catches + caught.astype(jnp.int32)
        step_count = state.step_count + 1
        terminated = step_count == self.episode_length
        if self.delayed:
            reward = jnp.where(terminated, catches, 0).astype(jnp.float32)
        else:
            reward = caught.astype(jnp.float32)
        new_ball = jax.random.randint(ball_key, (), 0, self.size, dtype=jnp.int32)
        next_state = CatchRunsState(
            jnp.where(landed, 0, ball_row).astype(jnp.int32),
            jnp.where(landed, new_ball, state.ball_column).astype(jnp.int32),
            paddle.astype(jnp.int32),
            step_count,
            catches,
        )
        fresh = self._initial_state(reset_key)
        state = jax.tree.map(lambda f, o: jnp.where(terminated, f, o), fresh, next_state)
        tallies = {"caught": caught.astype(jnp.float32), "missed": (landed & ~caught).astype(jnp.float32)}
        return state, TalliedTimeStep(self._observe(state), reward, terminated, jnp.zeros((), bool), tallies)

    def _initial_state(self, key: jax.Array) -> CatchRunsState:
        zero = jnp.zeros((), jnp.int32)
        column = jax.random.randint(key, (), 0, self.size, dtype=jnp.int32)
        return CatchRunsState(zero, column, jnp.asarray(self.size // 2, jnp.int32), zero, zero)

    def _observe(self, state: CatchRunsState) -> jax.Array:
        row = jnp.arange(self.size)[:, None]
        column = jnp.arange(self.size)[None, :]
        ball = (row == state.ball_row) & (column == state.ball_column)
        paddle = (row == self.size - 1) & (column == state.paddle_column)
        return (ball | paddle).astype(jnp.float32)
