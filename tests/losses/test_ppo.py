"""PPO's losses against numbers worked out by hand from the PPO paper's equations (eqs. 7, 11-12)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.losses.ppo import clipped_surrogate_loss, generalized_advantage_estimation, value_loss

EPS = 0.2

# (ratio, advantage, loss = -min(r A, clip(r, 0.8, 1.2) A), d loss / d log r)
CASES = [
    (1.5, 2.0, -2.4, 0.0),  # min(3.0, 1.2 * 2 = 2.4) = 2.4: the clipped term, no gradient
    (1.5, -2.0, 3.0, 3.0),  # min(-3.0, -2.4) = -3.0: unclipped; d(-r A)/d log r = -r A = -1.5 * -2 = 3
    (0.7, 2.0, -1.4, -1.4),  # min(1.4, 0.8 * 2 = 1.6) = 1.4: unclipped; -r A = -0.7 * 2 = -1.4
    (0.7, -2.0, 1.6, 0.0),  # min(-1.4, -1.6) = -1.6: the clipped term, no gradient
    (1.1, 2.0, -2.2, -2.2),  # inside the band: both terms 2.2; -r A = -2.2
]


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize(("ratio", "adv", "loss", "grad"), CASES)
def test_clipped_surrogate_and_its_gradient_by_hand(jit, ratio, adv, loss, grad):
    fn = jax.jit(clipped_surrogate_loss, static_argnums=2) if jit else clipped_surrogate_loss
    log_ratio = jnp.log(jnp.float32(ratio))
    np.testing.assert_allclose(fn(log_ratio, adv, EPS), loss, rtol=1e-6)
    g = jax.grad(lambda lr: fn(lr, adv, EPS))(log_ratio)
    np.testing.assert_allclose(g, grad, rtol=1e-6, atol=1e-7)


def test_clipped_surrogate_gives_no_gradient_to_the_advantage():
    g = jax.grad(lambda a: clipped_surrogate_loss(jnp.log(0.7), a, EPS))(jnp.float32(2.0))
    assert g == 0.0


def test_value_loss_by_hand():
    # 0.5 (V - target)^2 = 0.5 * (1.5 - 4)^2 = 3.125; d/dV = V - target = -2.5; the target gets none.
    np.testing.assert_allclose(value_loss(1.5, 4.0), 3.125)
    np.testing.assert_allclose(jax.grad(value_loss)(1.5, 4.0), -2.5)
    assert jax.grad(value_loss, argnums=1)(1.5, 4.0) == 0.0


# gamma = 0.9, lambda = 0.5; three transitions, the episode ends at the second one (index 1).
R = [1.0, 2.0, 3.0]
V_TM1 = [0.5, 1.0, 1.5]


@pytest.mark.parametrize("jit", [False, True])
def test_gae_true_terminal_does_not_bootstrap(jit):
    """Terminal at index 1: delta_1 = 2 + 0 * (anything) - 1 = 1.0; the trace stops there.
    delta_0 = 1 + 0.9 * 1.0 - 0.5 = 1.4; delta_2 = 3 + 0.9 * 4.0 - 1.5 = 5.1 (4.0 bootstraps the rollout).
    A_2 = 5.1; A_1 = 1.0; A_0 = 1.4 + 0.9 * 0.5 * 1.0 = 1.85."""
    fn = jax.jit(generalized_advantage_estimation, static_argnums=5) if jit else generalized_advantage_estimation
    adv = fn(R, [0.9, 0.0, 0.9], [1.0, 0.0, 1.0], V_TM1, [1.0, 99.0, 4.0], 0.5)  # 99: ignored at the terminal
    np.testing.assert_allclose(adv, [1.85, 1.0, 5.1], rtol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_gae_truncation_bootstraps_from_the_final_observation(jit):
    """Truncated at index 1 with V(final observation) = 2.0: delta_1 = 2 + 0.9 * 2.0 - 1.0 = 2.8, and the trace is
    still cut (A_1 = 2.8, not 2.8 + 0.45 * 5.1). A_0 = 1.4 + 0.45 * 2.8 = 2.66; A_2 = 5.1."""
    fn = jax.jit(generalized_advantage_estimation, static_argnums=5) if jit else generalized_advantage_estimation
    adv = fn(R, [0.9, 0.9, 0.9], [1.0, 0.0, 1.0], V_TM1, [1.0, 2.0, 4.0], 0.5)
    np.testing.assert_allclose(adv, [2.66, 2.8, 5.1], rtol=1e-6)


def test_gae_limits_lambda_zero_is_td_error_and_lambda_one_is_the_discounted_return():
    rng = np.random.default_rng(0)
    r, v = rng.normal(size=6).astype(np.float32), rng.normal(size=7).astype(np.float32)
    ones, gamma = np.ones(6, np.float32), np.full(6, 0.9, np.float32)
    td = r + 0.9 * v[1:] - v[:-1]
    np.testing.assert_allclose(generalized_advantage_estimation(r, gamma, ones, v[:-1], v[1:], 0.0), td, rtol=1e-5, atol=1e-6)
    # lambda = 1: A_t + V(s_t) = sum_k 0.9^k r_{t+k} + 0.9^(T-t) V(s_T)
    returns = [sum(0.9**k * r[t + k] for k in range(6 - t)) + 0.9 ** (6 - t) * v[6] for t in range(6)]
    adv = generalized_advantage_estimation(r, gamma, ones, v[:-1], v[1:], 1.0)
    np.testing.assert_allclose(adv + v[:-1], returns, rtol=1e-5, atol=1e-5)


def test_gae_over_an_episode_end_equals_the_two_episodes_apart():
    rng = np.random.default_rng(1)
    r, v_tm1, v_t = (rng.normal(size=5).astype(np.float32) for _ in range(3))
    discount = np.array([0.9, 0.9, 0.0, 0.9, 0.9], np.float32)
    cont = np.array([1, 1, 0, 1, 1], np.float32)
    whole = generalized_advantage_estimation(r, discount, cont, v_tm1, v_t, 0.7)
    first = generalized_advantage_estimation(r[:3], discount[:3], cont[:3], v_tm1[:3], v_t[:3], 0.7)
    second = generalized_advantage_estimation(r[3:], discount[3:], cont[3:], v_tm1[3:], v_t[3:], 0.7)
    np.testing.assert_allclose(whole, np.concatenate([first, second]), rtol=1e-6)
