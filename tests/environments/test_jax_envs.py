"""Tests for the pure-JAX environments: Catch, CartPole (against gymnasium) and the registry contract."""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.environments.jax_envs import (
    JAX_ENVS,
    CartPole,
    CartPoleState,
    Catch,
    CatchState,
    make_jax_env,
)

LEFT, STAY, RIGHT = 0, 1, 2


# ----------------------------------------------------------------------------------------------
# Catch
# ----------------------------------------------------------------------------------------------


def _catch_grid(env: Catch, ball_row: int, ball_column: int, paddle_column: int) -> np.ndarray:
    grid = np.zeros((env.rows, env.columns), np.float32)
    grid[ball_row, ball_column] = 1.0
    grid[env.rows - 1, paddle_column] = 1.0
    return grid


def _track(state: CatchState) -> jax.Array:
    """Move toward the ball's column (0: left, 1: stay, 2: right)."""
    return jnp.sign(state.ball_column - state.paddle_column) + 1


def _flee(state: CatchState) -> jax.Array:
    """Move away from the ball's column (left when the ball is at or right of the paddle)."""
    return jnp.where(state.ball_column >= state.paddle_column, LEFT, RIGHT)


def _catch_episode_returns(env: Catch, policy, key: jax.Array) -> jax.Array:
    """Play one episode from every ball column with a scripted policy; return the summed rewards."""

    def one_column(ball_column: jax.Array) -> jax.Array:
        state = CatchState(
            ball_row=jnp.int32(0),
            ball_column=ball_column,
            paddle_column=jnp.int32(env.columns // 2),
            step_count=jnp.int32(0),
        )

        def body(state, step_key):
            state, timestep = env.step(step_key, state, policy(state))
            return state, timestep.reward

        _, rewards = jax.lax.scan(body, state, jax.random.split(key, env.rows - 1))
        return rewards.sum()

    return jax.jit(jax.vmap(one_column))(jnp.arange(env.columns, dtype=jnp.int32))


def test_catch_scripted_episode_with_fixed_key():
    env = Catch()
    assert (env.rows, env.columns) == (6, 11)
    reset_key, *step_keys = jax.random.split(jax.random.key(3), env.rows)
    state, timestep = env.reset(reset_key)
    ball_column = int(state.ball_column)
    assert (int(state.ball_row), int(state.paddle_column), int(state.step_count)) == (0, 5, 0)
    np.testing.assert_array_equal(timestep.observation, _catch_grid(env, 0, ball_column, 5))
    assert float(timestep.reward) == 0.0 and not timestep.terminated and not timestep.truncated

    step = jax.jit(env.step)
    for t, step_key in enumerate(step_keys, start=1):
        state, timestep = step(step_key, state, _track(state))
        assert not timestep.truncated
        if t < env.rows - 1:
            assert not timestep.terminated and float(timestep.reward) == 0.0
            assert (int(state.ball_row), int(state.ball_column), int(state.step_count)) == (t, ball_column, t)
            np.testing.assert_array_equal(
                timestep.observation, _catch_grid(env, t, ball_column, int(state.paddle_column))
            )
    # The episode ends after exactly rows - 1 = 5 steps, caught, and auto-resets in the same call.
    assert bool(timestep.terminated) and float(timestep.reward) == 1.0
    fresh_state, fresh_timestep = env.reset(step_keys[-1])
    assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.all(a == b)), state, fresh_state))
    np.testing.assert_array_equal(timestep.observation, fresh_timestep.observation)
    assert timestep.observation[0].sum() == 1.0 and timestep.observation[env.rows - 1, 5] == 1.0
    assert timestep.observation.sum() == 2.0


@pytest.mark.parametrize("rows, columns", [(6, 11), (10, 5), (4, 7)])
def test_catch_tracking_always_wins_and_fleeing_always_loses(rows, columns):
    env = Catch(rows=rows, columns=columns)
    key = jax.random.key(0)
    np.testing.assert_array_equal(_catch_episode_returns(env, _track, key), np.ones(columns))
    # Fleeing pins the paddle to a wall opposite the ball (or, from the centre column, leaves it).
    np.testing.assert_array_equal(_catch_episode_returns(env, _flee, key), -np.ones(columns))


def test_catch_random_policy_matches_analytic_return():
    # The ball column is uniform and independent of a ball-blind policy, so P(catch) = 1/columns
    # and the expected return is (1/11)(+1) + (10/11)(-1) = -9/11 ~= -0.818 on 6 x 11.
    env = Catch()
    num_envs, episodes_per_env = 4096, 4
    num_steps = episodes_per_env * (env.rows - 1)

    def rollout(key):
        reset_key, loop_key = jax.random.split(key)
        state, _ = env.reset(reset_key)

        def body(state, key):
            action_key, step_key = jax.random.split(key)
            action = jax.random.randint(action_key, (), 0, env.num_actions)
            state, timestep = env.step(step_key, state, action)
            return state, (timestep.reward, timestep.terminated)

        _, (rewards, terminated) = jax.lax.scan(body, state, jax.random.split(loop_key, num_steps))
        return rewards, terminated

    rewards, terminated = jax.jit(jax.vmap(rollout))(jax.random.split(jax.random.key(7), num_envs))
    assert int(terminated.sum()) == num_envs * episodes_per_env
    assert np.all(np.asarray(rewards)[~np.asarray(terminated)] == 0.0)
    mean_return = float(rewards.sum() / terminated.sum())
    # 16384 episodes: standard error sqrt(1 - (9/11)^2) / 128 ~= 0.0045.
    assert mean_return == pytest.approx(-9 / 11, abs=0.025)


@pytest.mark.parametrize("kwargs", [{"rows": 1}, {"columns": 0}])
def test_catch_rejects_degenerate_grids(kwargs):
    with pytest.raises(ValueError, match="Catch needs"):
        Catch(**kwargs)


# ----------------------------------------------------------------------------------------------
# CartPole
# ----------------------------------------------------------------------------------------------

_RANDOM_ACTIONS = np.random.default_rng(0).integers(0, 2, size=500).tolist()
_ALTERNATING_ACTIONS = [0, 1] * 250


@pytest.mark.parametrize("actions", [_RANDOM_ACTIONS, _ALTERNATING_ACTIONS], ids=["random", "alternating"])
def test_cartpole_matches_gymnasium_step_for_step(actions):
    env = CartPole()
    initial = np.array([0.01, -0.02, 0.03, 0.04], np.float32)
    state = CartPoleState(*jnp.asarray(initial), step_count=jnp.int32(0))
    gym_env = gymnasium.make("CartPole-v1")
    gym_env.reset(seed=0)
    gym_env.unwrapped.state = initial.astype(np.float64)

    step = jax.jit(env.step)
    step_key = jax.random.key(11)
    for t, action in enumerate(actions, start=1):
        gym_obs, gym_reward, gym_terminated, gym_truncated, _ = gym_env.step(action)
        state, timestep = step(step_key, state, action)
        assert float(timestep.reward) == gym_reward == 1.0
        assert bool(timestep.terminated) == gym_terminated
        assert not timestep.truncated and not gym_truncated
        if gym_terminated:
            break
        np.testing.assert_allclose(timestep.observation, gym_obs, rtol=0, atol=1e-5, err_msg=f"step {t}")
    else:
        pytest.fail("the action sequence never terminated the episode")
    assert t > 10  # a trajectory long enough to accumulate integration error
    # The terminal step returns the first observation of the next episode, drawn with the step key.
    np.testing.assert_array_equal(timestep.observation, env.reset(step_key)[1].observation)
    assert int(state.step_count) == 0
    gym_env.close()


def test_cartpole_long_trajectory_matches_gymnasium_in_float64():
    # Replaying a fixed action sequence open-loop amplifies rounding by ~12% per step (the unstable
    # mode of the inverted pendulum), so float32 drifts from gymnasium's float64 by ~5e-3 after 150
    # steps. Run in float64 to check the dynamics themselves over a long, balanced trajectory.
    initial = np.array([0.01, -0.02, 0.03, 0.04])
    gym_env = gymnasium.make("CartPole-v1")
    gym_env.reset(seed=0)
    gym_env.unwrapped.state = initial.copy()
    actions, observation = [], initial
    for _ in range(150):  # a hand-tuned balancing controller, then push right until the cart leaves
        actions.append(int(observation @ np.array([0.01, 0.05, 1.0, 0.5]) > 0))
        observation = gym_env.step(actions[-1])[0]
    actions += [1] * 300

    gym_env.reset(seed=0)
    gym_env.unwrapped.state = initial.copy()
    with jax.enable_x64(True):
        env = CartPole()
        state = CartPoleState(*jnp.asarray(initial, jnp.float64), step_count=jnp.int32(0))
        step = jax.jit(env.step)
        for t, action in enumerate(actions, start=1):
            gym_obs, _, gym_terminated, _, _ = gym_env.step(action)
            state, timestep = step(jax.random.key(0), state, action)
            assert bool(timestep.terminated) == gym_terminated, f"step {t}"
            if gym_terminated:
                break
            assert state.x.dtype == jnp.float64
            np.testing.assert_allclose(timestep.observation, gym_obs, rtol=0, atol=1e-6, err_msg=f"step {t}")
    assert t > 150
    gym_env.close()


def test_cartpole_truncates_at_max_steps_and_auto_resets():
    env = CartPole(max_steps=5)
    key = jax.random.key(5)
    state = CartPoleState(*jnp.zeros(4, jnp.float32), step_count=jnp.int32(0))
    step = jax.jit(env.step)
    for t in range(1, 6):
        state, timestep = step(key, state, t % 2)
        assert not timestep.terminated and float(timestep.reward) == 1.0
        assert bool(timestep.truncated) == (t == 5)
    np.testing.assert_array_equal(timestep.observation, env.reset(key)[1].observation)
    assert int(state.step_count) == 0
    # The counter restarts: the next episode runs another max_steps steps.
    for t in range(1, 6):
        state, timestep = step(key, state, t % 2)
        assert bool(timestep.truncated) == (t == 5)


def test_cartpole_reset_is_uniform_in_the_small_box():
    env = CartPole()
    _, timesteps = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 1000))
    observations = np.asarray(timesteps.observation)
    assert np.all(np.abs(observations) <= 0.05)
    assert np.all(observations.max(axis=0) > 0.045) and np.all(observations.min(axis=0) < -0.045)


# ----------------------------------------------------------------------------------------------
# Registry and the contract every registered environment meets
# ----------------------------------------------------------------------------------------------


def _play(env, step_fn, reset_fn, num_steps: int):
    key = jax.random.key(42)
    state, timestep = reset_fn(key)
    outputs = [timestep]
    for t in range(num_steps):
        key, step_key = jax.random.split(key)
        state, timestep = step_fn(step_key, state, jnp.int32(t % env.num_actions))
        outputs.append(timestep)
    return outputs


@pytest.mark.parametrize("name", sorted(JAX_ENVS))
def test_jit_equals_eager(name):
    env = make_jax_env(name)
    eager = _play(env, env.step, env.reset, num_steps=12)
    jitted = _play(env, jax.jit(env.step), jax.jit(env.reset), num_steps=12)
    for a, b in zip(eager, jitted, strict=True):
        # every leaf of the time step (Key-to-Door's carries a dict of per-step tallies)
        for field_a, field_b in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            np.testing.assert_allclose(field_a, field_b, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", sorted(JAX_ENVS))
def test_vmap_over_16_keys_and_spec_properties(name):
    env = make_jax_env(name)
    keys = jax.random.split(jax.random.key(1), 16)
    states, timestep = jax.jit(jax.vmap(env.reset))(keys)
    actions = jnp.arange(16, dtype=jnp.int32) % env.num_actions
    states, next_timestep = jax.jit(jax.vmap(env.step))(keys, states, actions)
    for ts in (timestep, next_timestep):
        assert ts.observation.shape == (16, *env.observation_shape)
        assert ts.observation.dtype == jnp.float32
        assert ts.reward.shape == (16,) and ts.reward.dtype == jnp.float32
        assert ts.terminated.dtype == jnp.bool_ and ts.truncated.dtype == jnp.bool_
    prediction = getattr(env, "prediction_only", False)  # e.g. the random walk: fixed start, no actions
    fixed_start = prediction or getattr(env, "deterministic_start", False)  # e.g. the Chain: always the centre
    assert fixed_start or len(np.unique(np.asarray(timestep.observation).reshape(16, -1), axis=0)) > 1
    # Unbatched outputs match the properties as well.
    _, single = env.reset(jax.random.key(0))
    assert single.observation.shape == env.observation_shape and single.observation.dtype == jnp.float32
    assert single.reward.shape == () and single.terminated.shape == () and single.truncated.shape == ()
    assert isinstance(env.num_actions, int) and env.num_actions >= (1 if prediction else 2)


def test_make_jax_env_builds_with_keyword_arguments():
    assert make_jax_env("catch", rows=7, columns=7).observation_shape == (7, 7)
    assert make_jax_env("cartpole", max_steps=200) == CartPole(max_steps=200)
    assert isinstance(make_jax_env("catch"), Catch)


def test_make_jax_env_unknown_name_lists_known_names():
    with pytest.raises(ValueError, match="known: cartpole, catch"):
        make_jax_env("pong")


def test_make_jax_env_unknown_kwargs_are_all_named():
    with pytest.raises(TypeError, match="delayed_reward, width") as excinfo:
        make_jax_env("catch", rows=6, width=3, delayed_reward=True)
    assert "rows" not in str(excinfo.value).split("accepted")[0]


def test_cartpole_step_observed_returns_the_observation_before_the_automatic_reset():
    """The replay of the compiled DQN loop bootstraps from the true last observation at a time limit: at an episode
    end ``step_observed`` gives the state the step reached (here past the 12-degree or 2.4 limit, or at the time
    limit), while the timestep already carries the next episode's first observation (|.| <= 0.05)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from rlrepro.environments.jax_envs.cartpole import THETA_THRESHOLD, X_THRESHOLD, CartPole

    env = CartPole(max_steps=30)
    state, _ = env.reset(jax.random.key(0))
    step, plain_step = jax.jit(env.step_observed), jax.jit(env.step)
    ends = {"terminated": 0, "truncated": 0}
    for t in range(200):
        key = jax.random.key(t + 1)
        _, plain = plain_step(key, state, t % 3 == 0)
        state, timestep, last = step(key, state, t % 3 == 0)
        np.testing.assert_array_equal(plain.observation, timestep.observation)  # step is step_observed's first part
        if bool(timestep.terminated):
            assert abs(float(last[0])) > X_THRESHOLD or abs(float(last[2])) > THETA_THRESHOLD
            ends["terminated"] += 1
        elif bool(timestep.truncated):
            ends["truncated"] += 1
        else:
            np.testing.assert_array_equal(last, timestep.observation)
            continue
        assert float(jnp.max(jnp.abs(timestep.observation))) <= 0.05 and not np.array_equal(last, timestep.observation)
    assert ends["terminated"] > 0
