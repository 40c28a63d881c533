"""Key-to-Door (Raposo et al. 2021, §3.3, Fig. 5; Hung et al. 2019) and its variants A and B, in pure JAX.

The pycolab original is not specified in the paper (layout, apples, respawn, crop, actions: notes §2.3 and
ambiguity 5); this re-implementation records each choice as a field.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from rlrepro.environments.base import TalliedTimeStep

_MOVES = jnp.array([[-1, 0], [1, 0], [0, -1], [0, 1]], jnp.int32)  # up, down, left, right


ROOMS = 3  # one room per phase: the observation's last planes mark the room the agent is in

TALLIES: tuple[str, ...] = ("door_opened", "phase3_return", "apple_return", "first_key_taken", "second_key_taken")
"""Per-step amounts an episode sums (``TalliedTimeStep.tallies``): the door opened (0/1), the phase-3 reward
(door, per-step and no-door rewards: Fig. 5b right), the apple reward (Fig. 5b left), key 1 (yellow) or key 2 (red)
picked up (0/1)."""


class KeyToDoorState(NamedTuple):
    """Phase (0, 1, 2), step within the phase, agent cell, key cells, held key (0 none, 1 first, 2 second), apples."""

    phase: jax.Array
    phase_step: jax.Array
    agent: jax.Array  # [2] int32 (row, column)
    keys: jax.Array  # [2, 2] int32 cells of key 1 and key 2 (key 2 only with two_keys)
    held: jax.Array
    apples: jax.Array  # [size, size] bool


@dataclasses.dataclass(frozen=True)
class KeyToDoor:
    """Three phases in a ``size`` x ``size`` room, 4 actions (up, down, left, right; walls block).

    Phase 1 (``phase_lengths[0]`` steps): agent and key at random cells; walking onto the key picks it up
    (reward 0). Phase 2 (``phase_lengths[1]`` steps): ``apples`` apples at random cells, ``apple_reward``
    each (no respawn: ours). Phase 3 (at most ``phase_lengths[2]`` steps): the door is the top-centre cell.
    It opens only for an agent holding a key (§3.3: "but only if it picked up the key"): walking onto it then
    ends the episode and pays ``door_rewards[held - 1]``; without a key the closed door blocks like a wall
    (ours: pycolab's layout is not given) and the phase runs to its end. ``phase3_step_reward`` is paid on every
    phase-3 step, ``no_door_reward`` when the phase ends with the door unopened (with or without a key). The agent
    restarts at the bottom centre in phases 2 and 3. Each phase takes place in its own room (§3.3: "the second
    phase which takes place in another room"): the observation marks the room, so no state of one phase looks like
    a state of another. Observation: ``[size, size, 8]`` float32 planes (agent, key 1, key 2, apples, door, then
    one floor plane per room, all ones in the current phase's room: ours, the paper's rooms differ in a layout it
    does not give). The held key is never shown, so the door's outcome depends on phase 1. With two keys, taking
    one leaves the other on the floor of room 1 (ours: it can no longer be taken), so the state after taking the
    yellow key differs from the state after taking the red one.

    Paper settings: standard ``phase_lengths (15, 60, 10)``, ``door_rewards (5,)``. Variant A: phase 2 of
    30 steps, door reward 0, -1 per phase-3 step. Variant B: two keys, door -1 with key 1 (yellow) and -2
    with key 2 (red), -5 for not opening the door.
    """

    size: int = 5
    phase_lengths: tuple[int, int, int] = (15, 60, 10)
    apples: int = 10
    apple_reward: float = 1.0
    two_keys: bool = False
    door_rewards: tuple[float, ...] = (5.0,)
    phase3_step_reward: float = 0.0
    no_door_reward: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "phase_lengths", tuple(int(x) for x in self.phase_lengths))
        object.__setattr__(self, "door_rewards", tuple(float(x) for x in self.door_rewards))
        problems = []
        if self.size < 3:
            problems.append(f"size must be >= 3, got {self.size}")
        if len(self.phase_lengths) != 3 or min(self.phase_lengths) < 1:
            problems.append(f"phase_lengths must be three positive lengths, got {self.phase_lengths}")
        if not 0 <= self.apples <= self.size * self.size:
            problems.append(f"apples must be in [0, size^2], got {self.apples}")
        if len(self.door_rewards) != (2 if self.two_keys else 1):
            problems.append(f"door_rewards needs one value per key ({2 if self.two_keys else 1}), got {self.door_rewards}")
        if problems:
            raise ValueError("invalid KeyToDoor: " + "; ".join(problems))

    @property
    def num_actions(self) -> int:
        return 4

    @property
    def events(self) -> tuple[str, ...]:
        """The tallies whose steps the synthetic-return analysis marks (Fig. 5c: the key pick-up, the apples)."""
        return ("first_key_taken", "second_key_taken", "apple_return") if self.two_keys else ("first_key_taken",
                                                                                              "apple_return")

    @property
    def contrasts(self) -> tuple[tuple[str, str], ...]:
        """Pairs (event, reference) whose synthetic returns are contrasted per run, each against its own room's
        states: each key's pick-up against the apples (Fig. 5c: a spike at the key, flat at the apples)."""
        keys = ("first_key_taken", "second_key_taken") if self.two_keys else ("first_key_taken",)
        return tuple((key, "apple_return") for key in keys)

    @property
    def num_rooms(self) -> int:
        return ROOMS

    def rooms_of(self, observations: jax.Array) -> jax.Array:
        """The room (phase) each observation ``[..., size, size, planes]`` shows: its lit floor plane."""
        return jnp.argmax(jnp.sum(observations[..., 5:], axis=(-3, -2)), axis=-1).astype(jnp.int32)

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (self.size, self.size, 5 + ROOMS)

    @property
    def episode_length(self) -> int:
        """The longest episode in steps (the SR memory capacity)."""
        return sum(self.phase_lengths)

    @property
    def door(self) -> jax.Array:
        return jnp.array([0, self.size // 2], jnp.int32)

    @property
    def entry(self) -> jax.Array:
        return jnp.array([self.size - 1, self.size // 2], jnp.int32)

    def reset(self, key: jax.Array) -> tuple[KeyToDoorState, TalliedTimeStep]:
        state = self._initial_state(key)
        zero = jnp.zeros((), jnp.float32)
        tallies = {name: zero for name in TALLIES}
        return state, TalliedTimeStep(self._observe(state), zero, jnp.zeros((), bool), jnp.zeros((), bool), tallies)

    def step(self, key: jax.Array, state: KeyToDoorState, action: ArrayLike) -> tuple[KeyToDoorState, TalliedTimeStep]:
        apple_key, reset_key = jax.random.split(key)
        agent = self._move(state, action)
        on_key = jnp.all(agent[None, :] == state.keys, axis=1) & jnp.array([True, self.two_keys])
        pick = (state.phase == 0) & (state.held == 0) & jnp.any(on_key)
        held = jnp.where(pick, jnp.argmax(on_key) + 1, state.held).astype(jnp.int32)
        taken = pick & (jnp.arange(2) == held - 1)  # the picked key leaves the room; the other stays on its floor
        keys = jnp.where(taken[:, None], -1, state.keys)
        eat = (state.phase == 1) & state.apples[agent[0], agent[1]]
        apples = state.apples.at[agent[0], agent[1]].set(state.apples[agent[0], agent[1]] & ~eat)
        # The door opens only for an agent holding a key (§3.3: "but only if it picked up the key"); _move keeps
        # a keyless agent off the door cell, so reaching it means opening it.
        opened = (state.phase == 2) & jnp.all(agent == self.door) & (held > 0)
        door_values = jnp.asarray(self.door_rewards, jnp.float32)
        phase_step = state.phase_step + 1
        phase_over = phase_step == jnp.asarray(self.phase_lengths, jnp.int32)[state.phase]
        timed_out = (state.phase == 2) & phase_over & ~opened
        phase3_reward = (
            jnp.where(state.phase == 2, self.phase3_step_reward, 0.0)
            + jnp.where(opened, door_values[jnp.maximum(held - 1, 0)], 0.0)
            + jnp.where(timed_out, self.no_door_reward, 0.0)
        )
        apple_reward = jnp.where(eat, self.apple_reward, 0.0)
        terminated = opened | timed_out
        advance = phase_over & (state.phase < 2)
        next_state = KeyToDoorState(
            phase=jnp.where(advance, state.phase + 1, state.phase).astype(jnp.int32),
            phase_step=jnp.where(advance, 0, phase_step).astype(jnp.int32),
            agent=jnp.where(advance, self.entry, agent),
            keys=keys,
            held=held,
            apples=jnp.where(advance & (state.phase == 0), self._random_apples(apple_key), apples),
        )
        fresh = self._initial_state(reset_key)
        state = jax.tree.map(lambda f, o: jnp.where(terminated, f, o), fresh, next_state)
        tallies = {
            "door_opened": opened.astype(jnp.float32),
            "phase3_return": phase3_reward.astype(jnp.float32),
            "apple_return": apple_reward.astype(jnp.float32),
            "first_key_taken": (pick & (held == 1)).astype(jnp.float32),
            "second_key_taken": (pick & (held == 2)).astype(jnp.float32),
        }
        reward = (apple_reward + phase3_reward).astype(jnp.float32)
        return state, TalliedTimeStep(self._observe(state), reward, terminated, jnp.zeros((), bool), tallies)

    def _move(self, state: KeyToDoorState, action: ArrayLike) -> jax.Array:
        """The agent's next cell: walls block, and so does the closed door (phase 3, no key held)."""
        agent = jnp.clip(state.agent + _MOVES[jnp.asarray(action, jnp.int32)], 0, self.size - 1)
        door_closed = (state.phase == 2) & (state.held == 0) & jnp.all(agent == self.door)
        return jnp.where(door_closed, state.agent, agent)

    def _random_apples(self, key: jax.Array) -> jax.Array:
        cells = jax.random.permutation(key, self.size * self.size)[: self.apples]
        return jnp.zeros(self.size * self.size, bool).at[cells].set(True).reshape(self.size, self.size)

    def _initial_state(self, key: jax.Array) -> KeyToDoorState:
        cells = jax.random.permutation(key, self.size * self.size)[:3]
        rows, columns = cells // self.size, cells % self.size
        positions = jnp.stack([rows, columns], axis=1).astype(jnp.int32)
        keys = positions[1:3] if self.two_keys else jnp.stack([positions[1], jnp.array([-1, -1], jnp.int32)])
        zero = jnp.zeros((), jnp.int32)
        return KeyToDoorState(zero, zero, positions[0], keys, zero, jnp.zeros((self.size, self.size), bool))

    def _observe(self, state: KeyToDoorState) -> jax.Array:
        grid = jnp.indices((self.size, self.size)).transpose(1, 2, 0)  # [size, size, 2]

        def at(cell: jax.Array) -> jax.Array:
            return jnp.all(grid == cell, axis=-1)

        door = at(self.door) & (state.phase == 2)
        in_phase1 = state.phase == 0  # keys are shown in phase 1 only (the held key is never shown)
        rooms = [jnp.full((self.size, self.size), state.phase == room) for room in range(ROOMS)]
        planes = [at(state.agent), at(state.keys[0]) & in_phase1, at(state.keys[1]) & in_phase1, state.apples, door,
                  *rooms]
        return jnp.stack(planes, axis=-1).astype(jnp.float32)
