"""The non-stationary random walk of FRODO (§4, notes §2.2): dynamics, switching, true values."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.environments.jax_envs import RandomWalk, make_jax_env


def test_true_values_of_both_phases():
    env = make_jax_env("random_walk", num_states=5, switch_every=960, left_rewards=[0.0, -1.0])
    state, _ = env.reset(jax.random.key(0))
    np.testing.assert_allclose(env.true_values(state), [1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6], rtol=1e-6)
    np.testing.assert_allclose(env.true_values(state._replace(total_steps=jnp.int32(960))), [-2 / 3, -1 / 3, 0, 1 / 3, 2 / 3], atol=1e-6)
    assert int(env.phase(state._replace(total_steps=jnp.int32(1919)))) == 1


def test_left_reward_switches_and_episode_restarts_in_centre():
    env = RandomWalk(switch_every=4)
    for total, expected in ((3, 0.0), (4, -1.0)):
        state = env.reset(jax.random.key(0))[0]._replace(position=jnp.int32(0), total_steps=jnp.int32(total))
        for seed in range(20):  # find a key that moves left
            next_state, ts = env.step(jax.random.key(seed), state, 0)
            if bool(ts.terminated):
                break
        assert bool(ts.terminated) and float(ts.reward) == expected
        assert int(next_state.position) == 2 and int(next_state.total_steps) == total + 1
        np.testing.assert_array_equal(ts.observation, [0, 0, 1, 0, 0])


def test_empirical_returns_match_true_values():
    env = RandomWalk(switch_every=10**9)

    def episode_return(key):
        def body(carry, k):
            state, done, ret = carry
            state2, ts = env.step(k, state, 0)
            ret = ret + jnp.where(done, 0.0, ts.reward)
            return (state2, done | ts.terminated, ret), None

        state = env.reset(key)[0]
        (_, done, ret), _ = jax.lax.scan(body, (state, False, 0.0), jax.random.split(key, 400))
        return ret

    returns = jax.vmap(episode_return)(jax.random.split(jax.random.key(1), 4000))
    assert abs(float(jnp.mean(returns)) - 0.5) < 0.03  # v(C) = 3/6
