"""ReF-ER rules (Novati & Koumoutsakos 2019, eqs. 10-13) and V-RACER's terms, against hand-computed numbers."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.losses.refer import (
    behaviour_kl,
    beta_update,
    c_max_schedule,
    gaussian_kl,
    learning_rate_schedule,
    near_policy,
    retrace_q_ret,
    rule_weights,
    vracer_terms,
)


def test_beta_update_hand_sequence_and_fixed_points():
    # eq. 12, eta = 0.1, D = 0.1: far 0.2 > D twice -> 1 * 0.9 = 0.9, 0.9 * 0.9 = 0.81; far 0.05 <= D -> 0.81 * 0.9 + 0.1.
    beta, seq = 1.0, []
    for far in (0.2, 0.2, 0.05, 0.1):
        beta = float(beta_update(beta, far, 0.1, 0.1))
        seq.append(beta)
    assert seq == pytest.approx([0.9, 0.81, 0.829, 0.8461])  # 0.829 * 0.9 + 0.1 = 0.8461 (far == D counts as near)
    assert float(beta_update(0.0, 0.5, 0.1, 0.1)) == 0.0 and float(beta_update(1.0, 0.0, 0.1, 0.1)) == 1.0
    b = np.array([0.3, 0.3])
    stepped = np.asarray(beta_update(b, np.array([0.9, 0.0]), 0.1, 1e-4))
    assert stepped[0] < 0.3 < stepped[1] and np.all((0 <= stepped) & (stepped <= 1))


def test_c_max_and_learning_rate_schedules_eq13():
    # c_max(t) = 1 + C/(1 + A t): C = 4, A = 5e-7 -> 5 at t = 0; 1 + 4/(1 + 0.5) = 3.6667 at 1e6; 1 + 4/6 at 1e7.
    assert [c_max_schedule(t, 4.0, 5e-7) for t in (0, 1_000_000, 10_000_000)] == pytest.approx([5.0, 11 / 3, 5 / 3])
    assert learning_rate_schedule(10_000_000, 1e-4, 5e-7) == pytest.approx(1e-4 / 6)
    assert c_max_schedule(1e12, 4.0, 5e-7) == pytest.approx(1.0, abs=1e-4)


def test_near_policy_is_strict_and_symmetric_in_log_rho():
    c = 2.0
    log_rho = jnp.log(jnp.array([1.0, 1.999, 2.0, 2.5, 1 / 1.999, 0.5, 0.3]))
    np.testing.assert_array_equal(near_policy(log_rho, c), [1, 1, 0, 0, 1, 0, 0])


def test_rule_weights_per_variant():
    near, beta = jnp.array([1.0, 0.0]), 0.7
    expected = {  # (algorithm weight, KL weight) per sample, eq. 10 in loss form
        "refer": ([0.7, 0.0], [0.3, 0.3]),
        "refer1": ([1.0, 0.0], [0.0, 0.0]),
        "refer2": ([0.7, 0.7], [0.3, 0.3]),
        "er": ([1.0, 1.0], [0.0, 0.0]),
        "per": ([1.0, 1.0], [0.0, 0.0]),
    }
    for variant, (alg, kl) in expected.items():
        w, k = rule_weights(variant, near, beta)
        np.testing.assert_allclose(w, alg, rtol=1e-6, err_msg=variant)
        np.testing.assert_allclose(k, kl, rtol=1e-6, err_msg=variant)


def test_gaussian_kl_hand_value_direction_and_monte_carlo():
    # mu = N(0, 1), pi = N(1, 2^2): KL(mu||pi) = 1/2 [1/4 - 1 - ln(1/4) + 1/4] = 0.4431472;
    # KL(pi||mu) = 1/2 [4 - 1 - ln 4 + 1] = 1.3068528.
    assert float(behaviour_kl(0.0, 1.0, 1.0, 2.0, "mu_pi")) == pytest.approx(0.4431472, rel=1e-6)
    assert float(behaviour_kl(0.0, 1.0, 1.0, 2.0, "pi_mu")) == pytest.approx(1.3068528, rel=1e-6)
    # equal variances: the two directions coincide (DDPG and NAF, notes §4 item 1)
    assert float(behaviour_kl(0.3, 0.2, -0.1, 0.2, "mu_pi")) == pytest.approx(float(behaviour_kl(0.3, 0.2, -0.1, 0.2, "pi_mu")))
    x = jax.random.normal(jax.random.key(0), (200_000, 2)) * jnp.array([1.0, 0.5]) + jnp.array([0.0, 1.0])
    log_p = -0.5 * (((x - jnp.array([0.0, 1.0])) / jnp.array([1.0, 0.5])) ** 2).sum(1) - jnp.log(jnp.array([1.0, 0.5])).sum()
    log_q = -0.5 * (((x - jnp.array([0.5, 0.0])) / jnp.array([2.0, 1.0])) ** 2).sum(1) - jnp.log(jnp.array([2.0, 1.0])).sum()
    exact = gaussian_kl(jnp.array([0.0, 1.0]), jnp.array([1.0, 0.5]), jnp.array([0.5, 0.0]), jnp.array([2.0, 1.0]))
    assert float(jnp.mean(log_p - log_q)) == pytest.approx(float(exact), rel=0.02)


def test_vracer_terms_hand_values_and_gradient_of_the_policy_term():
    # pi = mu = N(0, 1), a = 0.5: rho = 1; Q^ret = 3, V = 1 -> V^tbc = 1 + 1 * (3 - 1) = 3, L^tbc = 1/2 (1 - 3)^2 = 2,
    # L^off-PG = -rho A = -2; d/dmean of -rho A = -A d rho/dmean = -A rho (a - m)/s^2 = -2 * 0.5 = -1.
    t = vracer_terms(1.0, jnp.array([0.0]), jnp.array([1.0]), jnp.array([0.5]), jnp.array([0.0]), jnp.array([1.0]), 3.0)
    assert (float(t.value_loss), float(t.policy_loss), float(t.kl), float(t.log_rho)) == pytest.approx((2.0, -2.0, 0.0, 0.0))
    g = jax.grad(lambda m: vracer_terms(1.0, m, jnp.array([1.0]), jnp.array([0.5]), jnp.array([0.0]), jnp.array([1.0]), 3.0).policy_loss)(
        jnp.array([0.0]))
    assert float(g[0]) == pytest.approx(-1.0)
    # the value gradient: d/dV 1/2 (V - V^tbc)^2 with V^tbc constant = V - V^tbc = -rho_bar (Q^ret - V) = -2
    gv = jax.grad(lambda v: vracer_terms(v, jnp.array([0.0]), jnp.array([1.0]), jnp.array([0.5]), jnp.array([0.0]), jnp.array([1.0]), 3.0).value_loss)(1.0)
    assert float(gv) == pytest.approx(-2.0)
    # ReF-ER-2's cap: rho = exp(7) (clipped log rho) capped at 1e3 in the policy term
    far = vracer_terms(0.0, jnp.array([0.0]), jnp.array([1.0]), jnp.array([0.0]), jnp.array([9.0]), jnp.array([1.0]), 1.0, rho_cap=1e3)
    assert float(far.log_rho) == pytest.approx(7.0) and float(far.policy_loss) == pytest.approx(-1e3)


def _episode_q_ret_direct(r, v, rho_bar, v_last, gamma):
    """Eqs. 6-8 written out per step: Q^ret_{t} = r_{t+1} + gamma V^tbc_{t+1}, V^tbc_T = v_last."""
    n, out = len(r), []
    for t in range(n):
        # expand the recursion forward from t: V^tbc_{t+1} = V_{t+1} + rho_bar_{t+1} (Q^ret_{t+1} - V_{t+1}) ...
        total, weight = r[t], gamma
        for k in range(t + 1, n):
            total += weight * (1 - rho_bar[k]) * v[k]
            weight *= rho_bar[k]
            total += weight * r[k]
            weight *= gamma
        out.append(total + weight * v_last)
    return np.array(out)


def test_retrace_two_step_hand_values_truncated_vs_terminal():
    # gamma = 0.5, r = [1, 2], V = [10, 20], rho_bar = [1, 0.5].
    # Truncated with V(s_T) = 4: Q^ret_1 = 2 + 0.5*4 = 4; V^tbc_1 = 20 + 0.5 (4 - 20) = 12; Q^ret_0 = 1 + 0.5*12 = 7.
    # Terminal: Q^ret_1 = 2; V^tbc_1 = 20 + 0.5 (2 - 20) = 11; Q^ret_0 = 1 + 0.5*11 = 6.5.
    def flat(v_boot):  # step k sees V and rho_bar of step k + 1; the last step bootstraps
        return (jnp.array([1.0, 2.0]), jnp.array([20.0, 0.0]), jnp.array([0.5, 0.0]), jnp.array([0.5, 0.0]),
                jnp.array([0.0, 0.5 * v_boot]))

    np.testing.assert_allclose(retrace_q_ret(*flat(4.0)), [7.0, 4.0])
    np.testing.assert_allclose(retrace_q_ret(*flat(0.0)), [6.5, 2.0])
    np.testing.assert_allclose(_episode_q_ret_direct([1.0, 2.0], [10.0, 20.0], [1.0, 0.5], 4.0, 0.5), [7.0, 4.0])


def test_retrace_scan_equals_direct_per_episode_computation_across_boundaries():
    rng = np.random.default_rng(0)
    gamma, lengths, ends = 0.9, [5, 1, 7, 3], [True, False, False, True]  # True: terminal, False: truncated
    flat, expected = [[], [], [], [], []], []
    for n, terminal in zip(lengths, ends):
        r, v, rho_bar = rng.normal(size=n), rng.normal(size=n), rng.uniform(0, 1, n)
        v_last = 0.0 if terminal else float(rng.normal())
        expected.extend(_episode_q_ret_direct(r, v, rho_bar, v_last, gamma))
        flat[0].extend(r)
        flat[1].extend(list(v[1:]) + [0.0])
        flat[2].extend(list(rho_bar[1:]) + [0.0])
        flat[3].extend([gamma] * (n - 1) + [0.0])
        flat[4].extend([0.0] * (n - 1) + [gamma * v_last])
    got = retrace_q_ret(*(jnp.asarray(x, jnp.float32) for x in flat))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    # rho_bar = 1 everywhere: Q^ret is the discounted return (plus the bootstrap)
    ones = [1.0] * 3
    q = retrace_q_ret(jnp.array(ones), jnp.array([5.0, 5.0, 0.0]), jnp.array([1.0, 1.0, 0.0]), jnp.array([gamma, gamma, 0.0]),
                      jnp.array([0.0, 0.0, gamma * 2.0]))
    np.testing.assert_allclose(q, [1 + gamma + gamma**2 + gamma**3 * 2, 1 + gamma + gamma**2 * 2, 1 + gamma * 2], rtol=1e-6)


def _toy_far_fraction(variant: str, steps: int = 2000) -> np.ndarray:
    """A stationary toy: a memory of 2000 actions from mu = N(0, 0.45^2) with advantage A(a) = a, which pushes the
    policy mean up forever; the far fraction is recounted over the whole memory after every step (eq. 12 with
    rate 0.01, D = 0.1, c_max = 2)."""
    mu_std, d, c_max, rate = 0.45, 0.1, 2.0, 0.01
    actions = jax.random.normal(jax.random.key(1), (2000, 1)) * mu_std

    def log_rho_all(mean):
        return jax.vmap(lambda a: vracer_terms(0.0, mean, jnp.array([mu_std]), a, jnp.array([0.0]), jnp.array([mu_std]), a[0]).log_rho)(actions)

    def loss(mean, beta, key):
        idx = jax.random.randint(key, (256,), 0, actions.shape[0])
        terms = jax.vmap(lambda a: vracer_terms(0.0, mean, jnp.array([mu_std]), a, jnp.array([0.0]), jnp.array([mu_std]), a[0]))(actions[idx])
        w, k = rule_weights(variant, near_policy(terms.log_rho, c_max), beta)
        return jnp.mean(w * terms.policy_loss + k * terms.kl)

    def step(carry, key):
        mean, beta = carry
        mean = mean - 0.01 * jax.grad(loss)(mean, beta, key)
        far = jnp.mean(1.0 - near_policy(log_rho_all(mean), c_max))
        beta = beta_update(beta, far, d, rate) if variant in ("refer", "refer2") else beta
        return (mean, beta), far

    _, far = jax.lax.scan(jax.jit(step), (jnp.array([0.0]), jnp.array(1.0)), jax.random.split(jax.random.key(2), steps))
    return np.asarray(far)


def test_far_fraction_tracks_d_only_with_rule2_on_a_stationary_toy():
    # measured: refer 0.099, refer2 0.101, refer1 0.48, er 0.94 (mean over the second half)
    refer, refer2, refer1, er = (_toy_far_fraction(v)[1000:].mean() for v in ("refer", "refer2", "refer1", "er"))
    assert abs(refer - 0.1) < 0.02 and abs(refer2 - 0.1) < 0.02, (refer, refer2)
    assert refer1 > 0.3 and er > 0.3, (refer1, er)
