"""Tests for Catch with several runs per episode (Raposo et al. 2021, §3.2) in rlrepro.environments.jax_envs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.environments.jax_envs import CatchRuns, make_jax_env


def _play(env: CatchRuns, policy: str, key: int = 0) -> tuple[list[float], list[bool]]:
    state, _ = env.reset(jax.random.key(key))
    rewards, ends = [], []
    step = jax.jit(env.step)
    for t in range(env.episode_length):
        if policy == "follow":
            action = int(jnp.sign(state.ball_column - state.paddle_column)) + 1
        else:  # never move: catches only the balls that fall in the centre column
            action = 1
        state, timestep = step(jax.random.key(1000 * key + t), state, action)
        rewards.append(float(timestep.reward))
        ends.append(bool(timestep.terminated))
    return rewards, ends


def test_episode_is_runs_times_six_steps_and_a_follower_catches_every_ball() -> None:
    env = make_jax_env("catch_runs", size=7, runs=5)
    assert env.episode_length == 30 and env.observation_shape == (7, 7) and env.num_actions == 3
    rewards, ends = _play(env, "follow")
    # standard: +1 at each of the 5 landings (steps 6, 12, ..., 30), 0 elsewhere; the episode ends at step 30
    assert rewards == [1.0 if (t + 1) % 6 == 0 else 0.0 for t in range(30)]
    assert ends == [False] * 29 + [True]


def test_delayed_variant_pays_the_total_at_the_last_step() -> None:
    env = CatchRuns(size=7, runs=5, delayed=True)
    rewards, _ = _play(env, "follow")
    assert rewards == [0.0] * 29 + [5.0]
    standard, _ = _play(CatchRuns(size=7, runs=5), "stay", key=3)
    delayed, _ = _play(CatchRuns(size=7, runs=5, delayed=True), "stay", key=3)
    # same balls (same keys): the delayed total equals the standard catches, paid once at the end
    assert delayed[:-1] == [0.0] * 29 and delayed[-1] == sum(standard)


def test_catches_and_misses_are_tallied_on_the_landing_step_whatever_the_reward_says() -> None:
    """Fig. 4c marks the steps of catches and misses: the tallies say so on each landing step, delayed or not."""
    for delayed in (False, True):
        env = CatchRuns(size=7, runs=5, delayed=delayed)
        assert env.events == ("caught", "missed")
        state, first = env.reset(jax.random.key(3))
        assert set(first.tallies) == {"caught", "missed"}
        caught, missed, rewards = [], [], []
        for t in range(env.episode_length):
            state, timestep = jax.jit(env.step)(jax.random.key(3000 + t), state, 1)  # stay: some balls are missed
            caught.append(float(timestep.tallies["caught"]))
            missed.append(float(timestep.tallies["missed"]))
            rewards.append(float(timestep.reward))
        landings = [(t + 1) % 6 == 0 for t in range(30)]
        assert [c + m for c, m in zip(caught, missed)] == [float(x) for x in landings]  # one of the two per ball
        assert 0 < sum(missed) < 5
        assert (caught == rewards) if not delayed else (rewards[-1] == sum(caught))


def test_a_policy_that_stays_catches_about_one_ball_in_seven() -> None:
    env = CatchRuns(size=7, runs=20)

    def episode(key: jax.Array) -> jax.Array:
        def step(carry, key):
            state, total = carry
            state, timestep = env.step(key, state, 1)
            return (state, total + timestep.reward), None

        state, _ = env.reset(key)
        (_, total), _ = jax.lax.scan(step, (state, 0.0), jax.random.split(key, env.episode_length))
        return total

    totals = jax.jit(jax.vmap(episode))(jax.random.split(jax.random.key(0), 2000))
    assert float(jnp.mean(totals)) == pytest.approx(20 / 7, abs=0.1)


def test_invalid_sizes_are_rejected() -> None:
    with pytest.raises(ValueError, match="runs"):
        CatchRuns(runs=0)
