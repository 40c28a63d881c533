"""Tests for the Chain of Synthetic Returns (Raposo et al. 2021, §3.1) in rlrepro.environments.jax_envs.chain."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.environments.jax_envs import Chain, make_jax_env

RIGHT, LEFT = 1, 0


def _episode(env: Chain, actions: list[int]) -> list:
    state, timestep = env.reset(jax.random.key(0))
    steps = [timestep]
    for action in actions:
        state, timestep = env.step(jax.random.key(1), state, action)
        steps.append(timestep)
    return steps


def test_default_is_the_papers_chain() -> None:
    env = make_jax_env("chain")
    # 17 states + 1 shared outcome observation = 18; trigger 7 right of the centre 8; 10 moves + 2 steps
    assert env.observation_shape == (18,) and env.num_actions == 2
    assert env.centre == 8 and env.trigger_position == 15 and env.episode_length == 12


def test_triggered_episode_pays_on_leaving_the_outcome_with_discount_zero_before() -> None:
    env = Chain()
    steps = _episode(env, [RIGHT] * 12)
    # positions after the free moves: 9..16 then clipped at 16; the trigger 15 is visited at move 7
    positions = [int(np.argmax(s.observation)) for s in steps[:11]]
    assert positions == [8, 9, 10, 11, 12, 13, 14, 15, 16, 16, 16]
    assert int(np.argmax(steps[11].observation)) == 17  # the shared outcome observation
    rewards = [float(s.reward) for s in steps[1:]]
    discounts = [float(s.discount) for s in steps[1:]]
    terminated = [bool(s.terminated) for s in steps[1:]]
    # transition 10 (last chain position -> outcome) has discount 0; transition 11 pays +1 and ends
    assert rewards == [0.0] * 11 + [1.0]
    assert discounts == [1.0] * 10 + [0.0, 1.0]
    assert terminated == [False] * 11 + [True]
    assert int(np.argmax(steps[12].observation)) == 8  # auto-reset to the centre in the same step


def test_untriggered_episode_pays_nothing_and_outcome_looks_the_same() -> None:
    env = Chain()
    left = _episode(env, [LEFT] * 12)
    right = _episode(env, [RIGHT] * 12)
    assert sum(float(s.reward) for s in left) == 0.0
    np.testing.assert_array_equal(left[11].observation, right[11].observation)  # shared outcome observation
    distinct = Chain(outcome_obs="distinct")
    assert distinct.observation_shape == (19,)
    assert int(np.argmax(_episode(distinct, [RIGHT] * 12)[11].observation)) == 18
    assert int(np.argmax(_episode(distinct, [LEFT] * 12)[11].observation)) == 17


def test_reward_on_entering_the_outcome() -> None:
    steps = _episode(Chain(reward_timing="outcome_entry"), [RIGHT] * 12)
    assert [float(s.reward) for s in steps[1:]] == [0.0] * 10 + [1.0, 0.0]


def test_random_policy_rarely_visits_the_trigger() -> None:
    # 7 net right moves within 10 unbiased +-1 moves (clipping at 0 is never reached from 8 in 10 moves
    # on the way to 15): exact probability by enumerating the 2^10 sequences.
    env = Chain()
    hits = 0
    for code in range(2**10):
        position, hit = 8, False
        for k in range(10):
            position = min(16, max(0, position + (1 if code >> k & 1 else -1)))
            hit |= position == 15
        hits += hit
    exact = hits / 2**10
    assert exact == pytest.approx(0.0215, abs=5e-4)

    def run(key: jax.Array) -> jax.Array:
        def step(carry, key):
            state, total = carry
            action_key, env_key = jax.random.split(key)
            state, timestep = env.step(env_key, state, jax.random.bernoulli(action_key).astype(jnp.int32))
            return (state, total + timestep.reward), None

        state, _ = env.reset(key)
        (_, total), _ = jax.lax.scan(step, (state, 0.0), jax.random.split(key, env.episode_length))
        return total

    returns = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(3), 20_000))
    assert float(jnp.mean(returns)) == pytest.approx(exact, abs=0.004)


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="num_states"):
        Chain(num_states=16)
    with pytest.raises(ValueError, match="outcome_obs"):
        Chain(outcome_obs="other")
    with pytest.raises(ValueError, match="trigger_offset"):
        Chain(trigger_offset=9)
