"""Tests for rlrepro.losses.synthetic_returns (Raposo et al. 2021, eqs. 1-3; notes §1.3 conventions)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rlrepro.losses.synthetic_returns import (
    augmented_reward,
    episode_memory_sums,
    init_memory,
    memory_sums,
    reset_memory,
    synthetic_return_loss,
    valid_slots,
    write_memory,
)


@pytest.mark.parametrize("jit", [False, True])
def test_memory_sums_wrap_around_by_hand(jit: bool) -> None:
    # C = 3, empty memory, c_t = [1, 2, 4, 8, 16], no reset. Prediction first, then the write:
    #   t0: no valid slot -> 0;            write slot 0 = 1
    #   t1: slot 0        -> 1;            write slot 1 = 2
    #   t2: slots 0, 1    -> 1 + 2 = 3;    write slot 2 = 4
    #   t3: counter 3 >= C, all slots -> 1 + 2 + 4 = 7; write slot 3 % 3 = 0 = 8 (oldest overwritten)
    #   t4: all slots     -> 8 + 2 + 4 = 14; write slot 4 % 3 = 1 = 16
    fn = jax.jit(memory_sums) if jit else memory_sums
    sums, slots = fn(jnp.zeros(3), 0, jnp.array([1.0, 2.0, 4.0, 8.0, 16.0]), jnp.zeros(5, bool))
    np.testing.assert_allclose(sums, [0.0, 1.0, 3.0, 7.0, 14.0])
    np.testing.assert_allclose(slots, [8.0, 16.0, 4.0])


@pytest.mark.parametrize("jit", [False, True])
def test_memory_sums_continue_a_memory_and_reset_by_hand(jit: bool) -> None:
    # C = 4, memory from the previous unroll holds one state with c = 5 (counter 1); c_t = [1, 2, 4, 8];
    # step 2 starts a new episode:
    #   t0: slot 0 -> 5;        write slot 1 = 1
    #   t1: 5 + 1 = 6;          write slot 2 = 2
    #   t2: reset, counter 0 -> 0 (the old episode's states no longer count); write slot 0 = 4
    #   t3: slot 0 -> 4
    fn = jax.jit(memory_sums) if jit else memory_sums
    sums, _ = fn(jnp.array([5.0, 0.0, 0.0, 0.0]), 1, jnp.array([1.0, 2.0, 4.0, 8.0]), jnp.array([False, False, True, False]))
    np.testing.assert_allclose(sums, [5.0, 6.0, 0.0, 4.0])


def test_whole_episode_cumsum_equals_step_by_step_memory() -> None:
    c_t = jax.random.normal(jax.random.key(0), (10,))
    stepwise, _ = memory_sums(jnp.zeros(10), 0, c_t, jnp.zeros(10, bool))
    np.testing.assert_allclose(stepwise, episode_memory_sums(c_t), rtol=1e-5, atol=1e-6)
    # by hand: exclusive cumsum of [1, 2, 3] is [0, 1, 3]
    np.testing.assert_allclose(episode_memory_sums(jnp.array([1.0, 2.0, 3.0])), [0.0, 1.0, 3.0])


def test_memory_split_over_unrolls_equals_one_pass() -> None:
    # Carrying the slots and counter from one unroll into the next gives the same sums as one long pass.
    c_t = jax.random.normal(jax.random.key(1), (9,))
    reset_t = jnp.array([False, False, False, False, True, False, False, False, False])
    whole, _ = memory_sums(jnp.zeros(6), 0, c_t, reset_t)
    first, slots = memory_sums(jnp.zeros(6), 0, c_t[:5], reset_t[:5])
    # after the first unroll the episode that started at step 4 has one state written
    second, _ = memory_sums(slots, 1, c_t[5:], reset_t[5:])
    np.testing.assert_allclose(jnp.concatenate([first, second]), whole, rtol=1e-6)


def test_prediction_at_t_depends_only_on_earlier_states() -> None:
    c_t = jnp.arange(1.0, 7.0)
    base, _ = memory_sums(jnp.zeros(6), 0, c_t, jnp.zeros(6, bool))
    t = 3
    later = c_t.at[t:].add(100.0)  # perturb s_t and every later state
    sums_later, _ = memory_sums(jnp.zeros(6), 0, later, jnp.zeros(6, bool))
    np.testing.assert_allclose(sums_later[: t + 1], base[: t + 1])
    earlier = c_t.at[t - 1].add(100.0)  # perturb s_{t-1}
    sums_earlier, _ = memory_sums(jnp.zeros(6), 0, earlier, jnp.zeros(6, bool))
    assert sums_earlier[t] == pytest.approx(float(base[t]) + 100.0)
    np.testing.assert_allclose(sums_earlier[: t], base[: t])


def test_memory_buffer_write_reset_and_wrap() -> None:
    memory = init_memory(capacity=2, dim=1)
    assert not np.any(valid_slots(memory.counter, 2))
    for value in (1.0, 2.0, 3.0):
        memory = write_memory(memory, jnp.array([value]))
    # three writes into two slots: slot 0 was overwritten by the third state, every slot counts
    np.testing.assert_allclose(memory.values[:, 0], [3.0, 2.0])
    assert int(memory.counter) == 3 and np.all(valid_slots(memory.counter, 2))
    memory = reset_memory(memory, True)
    assert int(memory.counter) == 0 and not np.any(valid_slots(memory.counter, 2))
    np.testing.assert_allclose(memory.values, 0.0)


def test_memory_writes_are_stop_gradiented() -> None:
    def stored(x: jax.Array) -> jax.Array:
        return jnp.sum(write_memory(init_memory(3, 2), x).values)

    np.testing.assert_allclose(jax.grad(stored)(jnp.ones(2)), 0.0)


# Hand case for the losses: r = [1, 0], g = [0.5, 0.25], sum_{k<t} c = [2, 4], b = [0.5, -1].
R, G, S, B = (jnp.array(x) for x in ([1.0, 0.0], [0.5, 0.25], [2.0, 4.0], [0.5, -1.0]))


@pytest.mark.parametrize("jit", [False, True])
def test_one_stage_loss_by_hand(jit: bool) -> None:
    # eq. 1: t0: prediction 0.5*2 + 0.5 = 1.5, loss 0.5*(1 - 1.5)^2 = 0.125; t1: 0.25*4 - 1 = 0, loss 0
    fn = jax.jit(synthetic_return_loss) if jit else synthetic_return_loss
    np.testing.assert_allclose(fn(R, G, S, B), [0.125, 0.0])
    # d/db = -(r - prediction) = [0.5, 0]; d/dg = -(r - prediction) * sum = [1.0, 0]
    grad_b = jax.grad(lambda b: jnp.sum(synthetic_return_loss(R, G, S, b)))(B)
    grad_g = jax.grad(lambda g: jnp.sum(synthetic_return_loss(R, g, S, B)))(G)
    np.testing.assert_allclose(grad_b, [0.5, 0.0])
    np.testing.assert_allclose(grad_g, [1.0, 0.0])


@pytest.mark.parametrize("jit", [False, True])
def test_two_stage_loss_by_hand(jit: bool) -> None:
    # eq. 3: t0: 0.5*(1 - 0.5)^2 = 0.125 plus 0.5*(1 - 0.5 - 0.5*2)^2 = 0.5*0.25 = 0.125 -> 0.25
    #        t1: 0.5*(0 + 1)^2 = 0.5 plus 0.5*(0 + 1 - 0.25*4)^2 = 0 -> 0.5
    fn = jax.jit(synthetic_return_loss, static_argnames="two_stage") if jit else synthetic_return_loss
    np.testing.assert_allclose(fn(R, G, S, B, two_stage=True), [0.25, 0.5])
    # b gets gradient only from the first term: d/db = -(r - b) = [-0.5, -1]
    grad_b = jax.grad(lambda b: jnp.sum(synthetic_return_loss(R, G, S, b, two_stage=True)))(B)
    np.testing.assert_allclose(grad_b, [-0.5, -1.0])
    # the second term alone gives b no gradient at all
    second = lambda b: jnp.sum(synthetic_return_loss(R, G, S, b, two_stage=True) - 0.5 * (R - b) ** 2)  # noqa: E731
    np.testing.assert_allclose(jax.grad(second)(B), 0.0)
    # ... while g and the memory sum are trained by it: d/dS = -(residual) * g = [0.5*0.5, 0] = [0.25, 0]
    grad_s = jax.grad(lambda s: jnp.sum(synthetic_return_loss(R, G, s, B, two_stage=True)))(S)
    np.testing.assert_allclose(grad_s, [0.25, 0.0])


def test_augmented_reward_by_hand_and_detached() -> None:
    # eq. 2 with alpha 0.3, beta 1: c = [2, -1], r = [0, 1] -> [0.6, 0.7]
    c, r = jnp.array([2.0, -1.0]), jnp.array([0.0, 1.0])
    np.testing.assert_allclose(augmented_reward(c, r, alpha=0.3, beta=1.0), [0.6, 0.7], rtol=1e-6)
    # Skiing (beta 0): the synthetic return only
    np.testing.assert_allclose(augmented_reward(c, r, alpha=0.5, beta=0.0), [1.0, -0.5])
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(augmented_reward(x, r, alpha=0.3, beta=1.0)))(c), 0.0)


def test_planted_contributions_are_recovered() -> None:
    """Regress the last-step reward of random episodes on tabular c, g, b (eq. 1): the planted states come back.

    States 0..7 are visited at random for 2..6 steps (varying lengths, so no constant shift of c can be
    absorbed by b); then state 8 ("end") pays r = sum over the visits of w(s), w = +1 for state 2,
    -0.5 for state 5, 0 elsewhere. Every other step pays 0.
    """
    num_states, end, max_len, episodes = 8, 8, 7, 512
    weights = np.zeros(num_states + 1, np.float32)
    weights[2], weights[5] = 1.0, -0.5
    rng = np.random.default_rng(0)
    states = np.full((episodes, max_len), end, np.int32)
    rewards = np.zeros((episodes, max_len), np.float32)
    valid = np.zeros((episodes, max_len), np.float32)
    for i in range(episodes):
        length = rng.integers(2, max_len)
        states[i, :length] = rng.integers(0, num_states, length)
        rewards[i, length] = weights[states[i, :length]].sum()
        valid[i, : length + 1] = 1.0
    states, rewards, valid = jnp.asarray(states), jnp.asarray(rewards), jnp.asarray(valid)

    def loss(params: dict) -> jax.Array:
        c, g, b = params["c"][states], jax.nn.sigmoid(params["g"][states]), params["b"][states]
        sums = jax.vmap(episode_memory_sums)(c)
        return jnp.sum(valid * jax.vmap(synthetic_return_loss)(rewards, g, sums, b)) / episodes

    params = {name: jnp.zeros(num_states + 1) for name in ("c", "g", "b")}
    optimizer = optax.adam(0.05)
    opt_state = optimizer.init(params)

    @jax.jit
    def step(params: dict, opt_state: optax.OptState) -> tuple[dict, optax.OptState]:
        updates, opt_state = optimizer.update(jax.grad(loss)(params), opt_state)
        return optax.apply_updates(params, updates), opt_state

    for _ in range(3000):
        params, opt_state = step(params, opt_state)
    gate_end = jax.nn.sigmoid(params["g"][end])
    recovered = np.asarray(gate_end * params["c"][:num_states])
    np.testing.assert_allclose(recovered, weights[:num_states], atol=0.05)
    assert float(loss(params)) < 1e-3
