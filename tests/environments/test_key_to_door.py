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
    assert env.observation_shape == (5, 5, 5) and env.episode_length == 85
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
