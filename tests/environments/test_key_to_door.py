"""Tests for Key-to-Door (Raposo et al. 2021, §3.3) and its variants A and B in rlrepro.environments.jax_envs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.environments.jax_envs import KeyToDoor, KeyToDoorState, make_jax_env

UP, DOWN, LEFT, RIGHT = 0, 1, 2, 3


def _start(env: KeyToDoor, agent=(2, 2), key1=(2, 3), key2=(-1, -1)) -> KeyToDoorState:
    zero = jnp.zeros((), jnp.int32)
    keys = jnp.array([key1, key2], jnp.int32)
    return KeyToDoorState(zero, zero, jnp.array(agent, jnp.int32), keys, zero, jnp.zeros((env.size, env.size), bool))


def _run(env: KeyToDoor, state: KeyToDoorState, actions: list[int]) -> tuple[list[float], list[bool], KeyToDoorState]:
    step = jax.jit(env.step)
    rewards, ends = [], []
    for t, action in enumerate(actions):
        state, timestep = step(jax.random.key(t), state, action)
        rewards.append(float(timestep.reward))
        ends.append(bool(timestep.terminated))
    return rewards, ends, state


def _episode(env: KeyToDoor, first: int, key2=(-1, -1)) -> tuple[list[float], list[bool], list[dict]]:
    """Phase 1: ``first`` then bump the top wall; phase 2: bump the bottom wall; phase 3: walk up from the entry
    (size-1, centre) for the whole phase (the door is 4 steps up)."""
    p1, p2, p3 = env.phase_lengths
    actions = [first] + [UP] * (p1 - 1) + [DOWN] * p2 + [UP] * p3
    step = jax.jit(env.step)
    state, rewards, ends, tallies = _start(env, key2=key2), [], [], []
    for t, action in enumerate(actions):
        state, timestep = step(jax.random.key(t), state, action)
        rewards.append(float(timestep.reward))
        ends.append(bool(timestep.terminated))
        tallies.append({name: float(v) for name, v in timestep.tallies.items()})
        if ends[-1]:
            break
    return rewards, ends, tallies


def _phase3(env: KeyToDoor, rewards: list[float]) -> list[float]:
    return rewards[sum(env.phase_lengths[:2]):]


STANDARD = dict(phase_lengths=(15, 60, 10), door_rewards=(5.0,))
VARIANT_A = dict(phase_lengths=(15, 30, 10), door_rewards=(0.0,), phase3_step_reward=-1.0)
VARIANT_B = dict(two_keys=True, door_rewards=(-1.0, -2.0), no_door_reward=-5.0)


def test_standard_key_pickup_pays_five_at_the_door() -> None:
    env = make_jax_env("key_to_door")
    assert env.observation_shape == (5, 5, 8) and env.episode_length == 85
    rewards, ends, tallies = _episode(env, RIGHT)
    assert rewards[0] == 0.0 and tallies[0]["first_key_taken"] == 1.0  # picking up the key pays nothing
    # phase 3 by hand: 4 steps up from (4, 2) to the door (0, 2), which opens: 0 + 0 + 0 + 5 = +5, episode over
    assert _phase3(env, rewards) == [0.0, 0.0, 0.0, 5.0] and ends[-1] and not any(ends[:-1])
    assert len(rewards) == 15 + 60 + 4 and sum(t["door_opened"] for t in tallies) == 1.0
    # phase 2 rewards are apples only: +1 each, at most `apples` of them (the agent stays on the bottom row)
    assert set(rewards[15:75]) <= {0.0, 1.0} and sum(rewards[15:75]) <= env.apples
    assert sum(t["apple_return"] for t in tallies) == sum(rewards[15:75])
    assert sum(t["phase3_return"] for t in tallies) == 5.0


def test_standard_without_the_key_the_door_stays_shut() -> None:
    """§3.3: the door pays +5 "only if it picked up the key": a keyless agent is blocked at (1, 2) below the door,
    nothing ends the episode before phase 3's 10 steps, and phase 3 returns 10 x 0 = 0."""
    env = KeyToDoor(**STANDARD)
    rewards, ends, tallies = _episode(env, LEFT)
    assert len(rewards) == 15 + 60 + 10 and ends[-1] and not any(ends[:-1])
    assert _phase3(env, rewards) == [0.0] * 10
    assert sum(t["door_opened"] for t in tallies) == 0.0 and sum(t["first_key_taken"] for t in tallies) == 0.0


def test_keyless_agent_is_blocked_below_the_closed_door() -> None:
    env = KeyToDoor(**STANDARD)
    zero = jnp.zeros((), jnp.int32)
    below = KeyToDoorState(jnp.array(2), zero, jnp.array([1, 2], jnp.int32), jnp.full((2, 2), -1, jnp.int32), zero,
                           jnp.zeros((5, 5), bool))
    state, timestep = env.step(jax.random.key(0), below, UP)
    np.testing.assert_array_equal(state.agent, [1, 2])
    assert not bool(timestep.terminated) and float(timestep.reward) == 0.0
    state, timestep = env.step(jax.random.key(0), below._replace(held=jnp.array(1)), UP)
    assert bool(timestep.terminated) and float(timestep.reward) == 5.0  # with the key it opens


def test_key_is_hidden_after_phase_one_and_apples_appear() -> None:
    env = KeyToDoor()
    _, _, state = _run(env, _start(env), [LEFT] * 15)  # key not taken
    observation = env._observe(state)
    assert int(state.phase) == 1 and float(observation[..., 1].sum()) == 0.0
    assert int(observation[..., 3].sum()) == env.apples
    np.testing.assert_array_equal(np.argwhere(np.asarray(observation[..., 0])), [[4, 2]])  # the entry cell


def test_variant_a_with_the_key() -> None:
    """Variant A (Suppl. Fig. 8): door 0, -1 per phase-3 step. With the key: 4 steps to the door, -1 x 4 + 0 = -4."""
    env = KeyToDoor(**VARIANT_A)
    rewards, ends, tallies = _episode(env, RIGHT)
    assert _phase3(env, rewards) == [-1.0] * 4 and ends[-1] and len(rewards) == 15 + 30 + 4
    assert sum(t["door_opened"] for t in tallies) == 1.0 and sum(t["phase3_return"] for t in tallies) == -4.0


def test_variant_a_without_the_key() -> None:
    """Variant A without the key: the door stays shut, all 10 phase-3 steps are paid, -1 x 10 = -10 (so the key is
    worth +6 in phase 3: the advantage SR should credit at the key)."""
    env = KeyToDoor(**VARIANT_A)
    rewards, ends, tallies = _episode(env, LEFT)
    assert _phase3(env, rewards) == [-1.0] * 10 and ends[-1] and not any(ends[:-1])
    assert sum(t["door_opened"] for t in tallies) == 0.0 and sum(t["phase3_return"] for t in tallies) == -10.0


@pytest.mark.parametrize(
    ("first", "phase3", "yellow", "red"),
    [
        (RIGHT, [0.0, 0.0, 0.0, -1.0], 1.0, 0.0),  # yellow key (2, 3): door -1 after 3 free steps
        (UP, [0.0, 0.0, 0.0, -2.0], 0.0, 1.0),  # red key (1, 2): door -2
        (LEFT, [0.0] * 9 + [-5.0], 0.0, 0.0),  # no key: the door stays shut, -5 at the 10th step
    ],
)
def test_variant_b_each_key_and_none(first: int, phase3: list[float], yellow: float, red: float) -> None:
    """Variant B (§3.3): yellow key -> door -1, red key -> door -2, the door not opened -> -5. The best phase-3
    return is the yellow key's (-1 > -2 > -5)."""
    env = KeyToDoor(**VARIANT_B)
    rewards, ends, tallies = _episode(env, first, key2=(1, 2))
    assert _phase3(env, rewards) == phase3 and ends[-1] and not any(ends[:-1])
    assert sum(t["first_key_taken"] for t in tallies) == yellow and sum(t["second_key_taken"] for t in tallies) == red
    assert sum(t["phase3_return"] for t in tallies) == sum(phase3)
    assert sum(t["door_opened"] for t in tallies) == (1.0 if yellow or red else 0.0)


def test_variant_b_key_held_but_door_not_reached() -> None:
    env = KeyToDoor(**VARIANT_B)
    timeout, ends, _ = _run(env, _start(env, key2=(1, 2)), [RIGHT] + [UP] * 14 + [DOWN] * 70)
    assert timeout[-10:] == [0.0] * 9 + [-5.0] and ends[-1] and not any(ends[:-1])


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="door_rewards"):
        KeyToDoor(two_keys=True)


def _rollout_observations(env: KeyToDoor, episodes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every observation of ``episodes`` uniform-random episodes with the phase it was seen in (one jitted scan)."""

    def episode(key: jax.Array) -> tuple[jax.Array, jax.Array]:
        start_key, steps_key = jax.random.split(key)
        state, first = env.reset(start_key)

        def step(carry, key):
            state, done = carry
            action_key, env_key = jax.random.split(key)
            next_state, timestep = env.step(env_key, state, jax.random.randint(action_key, (), 0, env.num_actions))
            seen = jnp.where(done | timestep.terminated, -1, next_state.phase)  # -1: after the episode ended
            return (next_state, done | timestep.terminated), (timestep.observation, seen)

        _, (observations, phases) = jax.lax.scan(step, (state, jnp.zeros((), bool)),
                                                 jax.random.split(steps_key, env.episode_length))
        return jnp.concatenate([first.observation[None], observations]), jnp.concatenate([state.phase[None], phases])

    observations, phases = jax.jit(jax.vmap(episode))(jax.random.split(jax.random.key(seed), episodes))
    observations = np.asarray(observations).reshape(-1, int(np.prod(env.observation_shape)))
    return observations, np.asarray(phases).reshape(-1)


@pytest.mark.parametrize("kwargs", [STANDARD, VARIANT_A, VARIANT_B], ids=["standard", "variant_a", "variant_b"])
def test_no_two_states_of_different_phases_share_an_observation(kwargs: dict) -> None:
    """§3.3: "the second phase which takes place in another room": every room is told apart by its observation, so
    a feed-forward network never confuses a phase-1 state after the pick-up with an emptied phase-2 room."""
    env = KeyToDoor(**kwargs)
    observations, phases = _rollout_observations(env, episodes=200)
    seen = {}
    for observation, phase in zip(observations, phases):
        if phase >= 0:
            seen.setdefault(observation.tobytes(), set()).add(int(phase))
    assert {1, 2} <= {p for phases_of in seen.values() for p in phases_of}  # the rollouts reach phases 2 and 3
    assert all(len(phases_of) == 1 for phases_of in seen.values())


def test_the_empty_rooms_of_the_three_phases_look_different() -> None:
    """The aliasing case by hand: the agent on the same cell, no key shown, no apple left, in each phase."""
    env = KeyToDoor(**STANDARD)
    zero = jnp.zeros((), jnp.int32)
    gone = jnp.full((2, 2), -1, jnp.int32)
    observations = [
        np.asarray(env._observe(KeyToDoorState(jnp.array(phase), zero, jnp.array([3, 1], jnp.int32), gone, zero,
                                               jnp.zeros((5, 5), bool))))
        for phase in range(3)
    ]
    assert env.observation_shape == (5, 5, 8)
    np.testing.assert_array_equal(env.rooms_of(jnp.stack(observations)), [0, 1, 2])  # the room each one shows
    assert not np.array_equal(observations[0], observations[1]) and not np.array_equal(observations[1], observations[2])
    assert not np.array_equal(observations[0], observations[2])
    for phase, observation in enumerate(observations):  # the room planes: all ones in the phase's own room only
        np.testing.assert_array_equal(observation[..., 5:].sum(axis=(0, 1)), [25.0 if r == phase else 0.0 for r in range(3)])


def test_variant_b_yellow_and_red_pickups_leave_different_observations() -> None:
    """Taking one key leaves the other on the floor: after the yellow pick-up the red key is still shown and the
    other way round, so c can credit the yellow key's state apart from the red key's."""
    env = KeyToDoor(**VARIANT_B)
    start = _start(env, agent=(2, 2), key1=(2, 3), key2=(2, 1))
    _, _, after_yellow = _run(env, start, [RIGHT, LEFT])  # take yellow at (2, 3), walk back to (2, 2)
    _, _, after_red = _run(env, start, [LEFT, RIGHT])  # take red at (2, 1), walk back to (2, 2)
    assert int(after_yellow.held) == 1 and int(after_red.held) == 2
    yellow, red = np.asarray(env._observe(after_yellow)), np.asarray(env._observe(after_red))
    assert not np.array_equal(yellow, red)
    assert yellow[2, 1, 2] == 1.0 and yellow[..., 1].sum() == 0.0  # red key still at (2, 1), yellow gone
    assert red[2, 3, 1] == 1.0 and red[..., 2].sum() == 0.0  # yellow key still at (2, 3), red gone
    _, _, again = _run(env, after_yellow, [LEFT])  # walking onto the red key while holding yellow takes nothing
    assert int(again.held) == 1 and np.asarray(env._observe(again))[2, 1, 2] == 1.0
