"""Continuous ACER's losses against numbers worked out by hand from the ACER paper's equations (Wang et al. 2017:
Retrace with c = min(1, rho^(1/d)), Q^opc, the stochastic dueling network, truncation with bias correction, the
efficient trust region)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.losses.acer import (
    acer_policy_statistics_gradient,
    retrace_q_ret,
    stochastic_dueling_q,
    trace_coefficients,
    truncation_with_bias_correction_gains,
    trust_region_projection,
    value_target,
)

GAMMA = 0.9
R = [1.0, 2.0, 3.0]
Q_TILDE = [0.5, 1.0, 1.5]
# V(s_1) = 2, V(s_2) = 3, V(s_3) = 4 (s_3: the final observation when the episode is truncated there)
V_NEXT = [2.0, 3.0, 4.0]
# d = 2 action dimensions: rho = 0.25, 0.25, 4 -> c = min(1, sqrt(rho)) = 0.5, 0.5, 1
LOG_RHO = np.log([0.25, 0.25, 4.0])


def test_trace_coefficients_take_the_d_th_root_of_rho_then_truncate_at_one():
    np.testing.assert_allclose(trace_coefficients(LOG_RHO, 2), [0.5, 0.5, 1.0], rtol=1e-6)
    # d = 1 is Retrace's min(1, rho); d = 4: 0.25^(1/4) = 0.7071
    np.testing.assert_allclose(trace_coefficients(LOG_RHO, 1), [0.25, 0.25, 1.0], rtol=1e-6)
    np.testing.assert_allclose(trace_coefficients(np.log([0.25]), 4), [0.25**0.25], rtol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_retrace_with_a_true_terminal_by_hand(jit):
    # The episode terminates at s_3: discount_2 = 0, so V(s_3) = 4 is ignored.
    #   Q2 = r2 = 3;                     correction c2 (Q2 - Q~2) = 1 * (3 - 1.5) = 1.5
    #   Q1 = 2 + 0.9 (3 + 1.5) = 6.05;   correction c1 (Q1 - Q~1) = 0.5 * (6.05 - 1) = 2.525
    #   Q0 = 1 + 0.9 (2 + 2.525) = 5.0725
    fn = jax.jit(retrace_q_ret) if jit else retrace_q_ret
    c = trace_coefficients(LOG_RHO, 2)
    q = fn(R, [GAMMA, GAMMA, 0.0], [1.0, 1.0, 0.0], V_NEXT, Q_TILDE, c)
    np.testing.assert_allclose(q, [5.0725, 6.05, 3.0], rtol=1e-6)


def test_retrace_with_a_truncation_bootstraps_from_the_final_observation():
    # Truncated at s_3 (time limit): discount_2 = gamma, V(s_3) = 4 bootstraps.
    #   Q2 = 3 + 0.9 * 4 = 6.6;          correction 1 * (6.6 - 1.5) = 5.1
    #   Q1 = 2 + 0.9 (3 + 5.1) = 9.29;   correction 0.5 * (9.29 - 1) = 4.145
    #   Q0 = 1 + 0.9 (2 + 4.145) = 6.5305
    q = retrace_q_ret(R, [GAMMA] * 3, [1.0, 1.0, 0.0], V_NEXT, Q_TILDE, trace_coefficients(LOG_RHO, 2))
    np.testing.assert_allclose(q, [6.5305, 9.29, 6.6], rtol=1e-6)


def test_q_opc_is_the_recursion_with_unit_traces():
    # c = 1, terminal at s_3: Q2 = 3, Q1 = 6.05 (as above), correction 1 * (6.05 - 1) = 5.05,
    # Q0 = 1 + 0.9 (2 + 5.05) = 7.345
    q = retrace_q_ret(R, [GAMMA, GAMMA, 0.0], [1.0, 1.0, 0.0], V_NEXT, Q_TILDE, jnp.ones(3))
    np.testing.assert_allclose(q, [7.345, 6.05, 3.0], rtol=1e-6)


def test_a_cut_trace_does_not_reach_across_an_episode_end():
    # The first episode is truncated after step 0 (continue_0 = 0): Q0 = 1 + 0.9 * V_final(2) = 2.8, whatever follows.
    q = retrace_q_ret(R, [GAMMA] * 3, [0.0, 1.0, 0.0], V_NEXT, Q_TILDE, trace_coefficients(LOG_RHO, 2))
    np.testing.assert_allclose(q[0], 2.8, rtol=1e-6)
    np.testing.assert_allclose(q[1:], [9.29, 6.6], rtol=1e-6)
    # ... and a true terminal there: Q0 = r0 = 1
    q = retrace_q_ret(R, [0.0, GAMMA, GAMMA], [0.0, 1.0, 0.0], V_NEXT, Q_TILDE, trace_coefficients(LOG_RHO, 2))
    np.testing.assert_allclose(q[0], 1.0, rtol=1e-6)


def test_retrace_is_a_target_without_gradient():
    grads = jax.grad(lambda q: jnp.sum(retrace_q_ret(R, [GAMMA] * 3, [1.0, 1.0, 0.0], V_NEXT, q, jnp.ones(3))))(
        jnp.asarray(Q_TILDE))
    np.testing.assert_array_equal(grads, 0.0)


def test_value_target_by_hand():
    # min(1, rho) (Q^ret - Q~) + V: rho = 0.5 -> 0.5 (5 - 3) + 2 = 3; rho = 4 -> 1 * 2 + 2 = 4
    np.testing.assert_allclose(value_target(5.0, 3.0, 2.0, np.log(0.5)), 3.0, rtol=1e-6)
    np.testing.assert_allclose(value_target(5.0, 3.0, 2.0, np.log(4.0)), 4.0, rtol=1e-6)


def test_stochastic_dueling_q_subtracts_the_mean_advantage_of_the_samples():
    # V = 1, A(s, a) = 2, A(s, u_i) = 1..5 (mean 3): Q~ = 1 + 2 - 3 = 0
    np.testing.assert_allclose(stochastic_dueling_q(1.0, 2.0, [1.0, 2.0, 3.0, 4.0, 5.0]), 0.0, atol=1e-7)
    # batched: the mean is over the last axis only
    q = stochastic_dueling_q(jnp.array([1.0, 0.0]), jnp.array([2.0, 1.0]), jnp.array([[1.0, 5.0], [0.0, 0.0]]))
    np.testing.assert_allclose(q, [0.0, 1.0], atol=1e-7)
    # its gradient reaches V, A(s, a) with weight 1 and each A(s, u_i) with -1/n
    grads = jax.grad(lambda v, a, u: stochastic_dueling_q(v, a, u), argnums=(0, 1, 2))(1.0, 2.0, jnp.ones(5))
    np.testing.assert_allclose(grads[0], 1.0)
    np.testing.assert_allclose(grads[1], 1.0)
    np.testing.assert_allclose(grads[2], [-0.2] * 5, rtol=1e-6)


@pytest.mark.parametrize(
    ("rho", "q_opc", "rho_sample", "adv_sample", "gain_taken", "gain_sample"),
    [
        (2.0, 3.0, 10.0, 2.0, 4.0, 1.0),  # min(5, 2) (3 - 1) = 4; [1 - 5/10]_+ * 2 = 1
        (10.0, 3.0, 4.0, 2.0, 10.0, 0.0),  # min(5, 10) * 2 = 10; [1 - 5/4]_+ = 0: no correction when rho' <= c
        (0.5, -1.0, 20.0, -4.0, -1.0, -3.0),  # 0.5 * (-1 - 1) = -1; (1 - 0.25) * -4 = -3
    ],
)
def test_truncation_with_bias_correction_gains_by_hand(rho, q_opc, rho_sample, adv_sample, gain_taken, gain_sample):
    g1, g2 = truncation_with_bias_correction_gains(np.log(rho), q_opc, 1.0, np.log(rho_sample), adv_sample, 5.0)
    np.testing.assert_allclose(g1, gain_taken, rtol=1e-6)
    np.testing.assert_allclose(g2, gain_sample, rtol=1e-6, atol=1e-7)


def test_trust_region_leaves_g_alone_inside_the_region():
    # k . g = 0.5 * 1 + 0 * 2 = 0.5 < delta = 1 (inside), and k . g = 1 = delta (on the boundary): z = g
    np.testing.assert_allclose(trust_region_projection(jnp.array([1.0, 2.0]), jnp.array([0.5, 0.0]), 1.0), [1.0, 2.0])
    np.testing.assert_allclose(trust_region_projection(jnp.array([1.0, 2.0]), jnp.array([1.0, 0.0]), 1.0), [1.0, 2.0])


def test_trust_region_projects_onto_the_constraint_by_hand():
    # g = (3, 2), k = (1, 1): k . g = 5 > 1; scale = (5 - 1) / |k|^2 = 2; z = (3 - 2, 2 - 2) = (1, 0); k . z = 1 = delta
    z = trust_region_projection(jnp.array([3.0, 2.0]), jnp.array([1.0, 1.0]), 1.0)
    np.testing.assert_allclose(z, [1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(jnp.dot(jnp.array([1.0, 1.0]), z), 1.0, rtol=1e-6)


def test_trust_region_property_k_dot_z_never_exceeds_delta():
    rng = np.random.default_rng(0)
    g, k = rng.normal(size=(64, 6)) * 3.0, rng.normal(size=(64, 6))
    z = np.stack([trust_region_projection(gi, ki, 0.5) for gi, ki in zip(g, k)])
    kz, kg = np.sum(k * z, axis=1), np.sum(k * g, axis=1)
    assert np.all(kz <= 0.5 + 1e-4)
    np.testing.assert_allclose(np.where(kg > 0.5, kz, 0.5), 0.5, rtol=1e-4)  # active constraint: k . z = delta
    np.testing.assert_allclose(np.where(kg <= 0.5, 1.0, 0.0)[:, None] * (z - g), 0.0, atol=1e-6)


def test_policy_statistics_gradient_by_hand():
    # One action dimension, phi = (m, s) = (0, 1); d/dm log N(a; m, s) = (a - m)/s^2, d/ds = ((a - m)^2 - s^2)/s^3.
    # a_t = 1 -> (1, 0); a' = 2 -> (2, 3). Gains 1 and 0.5: g = (1 + 1, 0 + 1.5) = (2, 1.5).
    # The average policy equal to pi: k = grad KL = 0, so z = g.
    one = jnp.ones(1)
    z_mean, z_std, active = acer_policy_statistics_gradient(0.0 * one, one, 0.0 * one, one, one, 2.0 * one, 1.0, 0.5, 1.0)
    np.testing.assert_allclose([z_mean[0], z_std[0]], [2.0, 1.5], rtol=1e-6)
    assert not active
    # Average policy N(1, 1): KL(N(1,1) || N(m,s)) = 1/2 [1/s^2 - 1 + ln s^2 + (m - 1)^2 / s^2];
    # k = (d/dm, d/ds) at (0, 1) = ((m - 1)/s^2, -1/s^3 + 1/s - (m - 1)^2/s^3) = (-1, -1).
    # Gains -2 and 0: g = (-2, 0); k . g = 2 > delta = 1: scale (2 - 1)/2 = 0.5; z = (-2 + 0.5, 0 + 0.5) = (-1.5, 0.5)
    z_mean, z_std, active = acer_policy_statistics_gradient(0.0 * one, one, one, one, one, 2.0 * one, -2.0, 0.0, 1.0)
    np.testing.assert_allclose([z_mean[0], z_std[0]], [-1.5, 0.5], rtol=1e-6)
    assert active
    assert float(-z_mean[0] - z_std[0]) == pytest.approx(1.0)  # k . z = delta
