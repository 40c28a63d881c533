"""The Chain of Synthetic Returns (Raposo et al. 2021, §3.1, Fig. 3) as a pure-JAX environment.

An infinite-delay credit-assignment task: the agent moves freely along a chain for ``moves`` steps, then
passes to an outcome state that pays ``reward`` only if it visited the trigger state during the free
moves. The environment sets the TD discount of the transition into the outcome state (paper: 0), so
TD learning cannot carry the reward back to the free moves; only state-associative credit can.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

NUM_ACTIONS = 2  # 0: left, 1: right


class ChainTimeStep(NamedTuple):
    """``TimeStep`` plus the environment's per-step discount (the factor on gamma for this transition)."""

    observation: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    discount: jax.Array


class ChainState(NamedTuple):
    """Chain position (int32), steps taken in the episode (int32) and whether the trigger was visited."""

    position: jax.Array
    step_count: jax.Array
    triggered: jax.Array


@dataclasses.dataclass(frozen=True)
class Chain:
    """The Chain task; every choice the paper leaves open is a field (notes §2.1 and ambiguity 3).

    One episode (``moves`` = M): step 0 starts in the centre ``num_states // 2``; steps 0..M-1 are the free
    moves (left/right, clipped at the ends; landing on ``centre + trigger_offset`` sets the trigger); at
    step M the agent, on its last chain position, passes to the outcome state whatever it does, with
    per-step discount ``outcome_discount`` (paper: 0); at step M + 1, in the outcome state, the episode
    terminates. ``reward`` is paid on leaving the outcome state (``reward_timing: outcome_exit``, default) or
    on entering it (``outcome_entry``; the discount-0 trick then no longer separates the reward from the
    free moves' values). An episode lasts M + 2 steps (the memory capacity that holds a whole episode).

    Observation: one-hot over the chain states plus the outcome state(s): ``shared`` (default, length
    ``num_states + 1`` = 18 as in the paper) or ``distinct`` (rewarding and non-rewarding outcomes have
    different observations; then b(s_t) alone could explain the reward and c would learn nothing).

    A uniform random policy visits the trigger (7 right in 10 moves) with probability 2.15% (notes: the
    paper's "0.8%" matches 8 moves, 2/256).
    """

    num_states: int = 17
    moves: int = 10
    trigger_offset: int = 7
    outcome_obs: Literal["shared", "distinct"] = "shared"
    reward_timing: Literal["outcome_exit", "outcome_entry"] = "outcome_exit"
    outcome_discount: float = 0.0
    reward: float = 1.0
    deterministic_start: bool = dataclasses.field(default=True, init=False, repr=False)  # always the centre

    def __post_init__(self) -> None:
        problems = []
        if self.num_states < 3 or self.num_states % 2 == 0:
            problems.append(f"num_states must be odd and >= 3 (a centre start), got {self.num_states}")
        if self.moves < 1:
            problems.append(f"moves must be >= 1, got {self.moves}")
        if not 0 < abs(self.trigger_offset) <= self.num_states // 2:
            problems.append(f"trigger_offset must be non-zero and inside the chain, got {self.trigger_offset}")
        if self.outcome_obs not in ("shared", "distinct"):
            problems.append(f"outcome_obs must be 'shared' or 'distinct', got {self.outcome_obs!r}")
        if self.reward_timing not in ("outcome_exit", "outcome_entry"):
            problems.append(f"reward_timing must be 'outcome_exit' or 'outcome_entry', got {self.reward_timing!r}")
        if not 0.0 <= self.outcome_discount <= 1.0:
            problems.append(f"outcome_discount must be in [0, 1], got {self.outcome_discount}")
        if problems:
            raise ValueError("invalid Chain: " + "; ".join(problems))

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (self.num_states + (1 if self.outcome_obs == "shared" else 2),)

    @property
    def episode_length(self) -> int:
        """Steps per episode: the free moves, the last chain position and the outcome state."""
        return self.moves + 2

    @property
    def centre(self) -> int:
        return self.num_states // 2

    @property
    def trigger_position(self) -> int:
        return self.centre + self.trigger_offset

    def reset(self, key: jax.Array) -> tuple[ChainState, ChainTimeStep]:
        """Start in the centre with the trigger not visited."""
        del key
        state = self._initial_state()
        zero = jnp.zeros((), jnp.float32)
        return state, ChainTimeStep(self._observe(state), zero, jnp.zeros((), bool), jnp.zeros((), bool), zero + 1.0)

    def step(self, key: jax.Array, state: ChainState, action: ArrayLike) -> tuple[ChainState, ChainTimeStep]:
        """Move (free steps), pass to the outcome state (step M) or end the episode (step M + 1)."""
        del key
        free = state.step_count < self.moves
        move = jnp.where(jnp.asarray(action, jnp.int32) == 1, 1, -1)
        moved = jnp.clip(state.position + move, 0, self.num_states - 1)
        position = jnp.where(free, moved, state.position).astype(jnp.int32)
        triggered = state.triggered | (free & (position == self.trigger_position))
        entering = state.step_count == self.moves
        terminated = state.step_count == self.moves + 1
        paying = terminated if self.reward_timing == "outcome_exit" else entering
        reward = jnp.where(paying & triggered, self.reward, 0.0).astype(jnp.float32)
        discount = jnp.where(entering, self.outcome_discount, 1.0).astype(jnp.float32)
        next_state = ChainState(position, state.step_count + 1, triggered)
        state = jax.tree.map(lambda fresh, old: jnp.where(terminated, fresh, old), self._initial_state(), next_state)
        return state, ChainTimeStep(self._observe(state), reward, terminated, jnp.zeros((), bool), discount)

    def state_observations(self) -> jax.Array:
        """The observation of every chain position, [num_states, obs] (for the SR profile over the chain)."""
        return jax.nn.one_hot(jnp.arange(self.num_states), self.observation_shape[0], dtype=jnp.float32)

    def _initial_state(self) -> ChainState:
        return ChainState(
            jnp.asarray(self.centre, jnp.int32), jnp.zeros((), jnp.int32), jnp.zeros((), bool)
        )

    def _observe(self, state: ChainState) -> jax.Array:
        in_outcome = state.step_count > self.moves
        outcome_index = self.num_states + jnp.where(
            (self.outcome_obs == "distinct") & state.triggered, 1, 0
        )
        index = jnp.where(in_outcome, outcome_index, state.position)
        return jax.nn.one_hot(index, self.observation_shape[0], dtype=jnp.float32)
