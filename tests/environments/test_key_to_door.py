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


def _phase1_then_to_door(env: KeyToDoor, first: int) -> list[int]:
    # phase 1: `first` then bump the top wall; phase 2: bump the bottom wall (no apples on the bottom
    # row are eaten only if present -- counted separately); phase 3: from (size-1, centre) 4 steps up
    p1, p2, _ = env.phase_lengths
    return [first] + [UP] * (p1 - 1) + [DOWN] * p2 + [UP] * (env.size - 1)


def test_standard_key_pickup_pays_five_at_the_door() -> None:
    env = make_jax_env("key_to_door")
    assert env.observation_shape == (5, 5, 5) and env.episode_length == 85
    rewards, ends, _ = _run(env, _start(env), _phase1_then_to_door(env, RIGHT))
    assert rewards[0] == 0.0  # picking up the key pays nothing
    assert rewards[-1] == 5.0 and ends[-1] and not any(ends[:-1])
    assert len(rewards) == 15 + 60 + 4
    # phase 2 rewards are apples only: +1 each, at most `apples` of them (the agent stays on the bottom row)
    assert set(rewards[15:75]) <= {0.0, 1.0} and sum(rewards[15:75]) <= env.apples


def test_without_the_key_the_door_pays_nothing() -> None:
    env = KeyToDoor()
    rewards, ends, _ = _run(env, _start(env), _phase1_then_to_door(env, LEFT))
    assert rewards[-1] == 0.0 and ends[-1]


def test_key_is_hidden_after_phase_one_and_apples_appear() -> None:
    env = KeyToDoor()
    _, _, state = _run(env, _start(env), [LEFT] * 15)  # key not taken
    observation = env._observe(state)
    assert int(state.phase) == 1 and float(observation[..., 1].sum()) == 0.0
    assert int(observation[..., 3].sum()) == env.apples
    np.testing.assert_array_equal(np.argwhere(np.asarray(observation[..., 0])), [[4, 2]])  # the entry cell


def test_variant_a_penalises_phase_three_steps() -> None:
    env = KeyToDoor(phase_lengths=(15, 30, 10), door_rewards=(0.0,), phase3_step_reward=-1.0)
    rewards, ends, _ = _run(env, _start(env), _phase1_then_to_door(env, RIGHT))
    assert rewards[-4:] == [-1.0] * 4 and ends[-1]  # 4 steps to the door, door reward 0


def test_variant_b_keys_and_timeout() -> None:
    env = KeyToDoor(two_keys=True, door_rewards=(-1.0, -2.0), no_door_reward=-5.0)
    yellow, _, _ = _run(env, _start(env, key2=(1, 2)), _phase1_then_to_door(env, RIGHT))
    red, _, _ = _run(env, _start(env, key2=(1, 2)), _phase1_then_to_door(env, UP))
    assert yellow[-1] == -1.0 and red[-1] == -2.0
    timeout, ends, _ = _run(env, _start(env, key2=(1, 2)), [RIGHT] + [UP] * 14 + [DOWN] * 70)
    assert timeout[-1] == -5.0 and ends[-1] and not any(ends[:-1])


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="door_rewards"):
        KeyToDoor(two_keys=True)
