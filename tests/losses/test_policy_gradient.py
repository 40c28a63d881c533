"""Tests for rlrepro.losses.policy_gradient (IMPALA section 4.2; 5.2.2 epsilon-correction)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.losses import entropy, log_prob, policy_gradient_loss

# Two actions. Row 0: logits [0, ln 3] -> pi = [1/4, 3/4].
#              Row 1: logits [ln 2, ln 2] -> pi = [1/2, 1/2].
LOGITS = np.array([[0.0, np.log(3.0)], [np.log(2.0), np.log(2.0)]], np.float32)
ACTIONS = np.array([0, 1], np.int32)
ADV = np.array([2.0, -1.0], np.float32)


@pytest.mark.parametrize("jit", [False, True])
def test_log_prob_and_loss_hand_computed(jit: bool) -> None:
    # log pi(a_0) = ln(1/4) = -1.3862944, log pi(a_1) = ln(1/2) = -0.6931472
    # loss = -log pi * adv = [1.3862944 * 2, 0.6931472 * -1] = [2.7725887, -0.6931472]
    lp = (jax.jit(log_prob) if jit else log_prob)(LOGITS, ACTIONS)
    np.testing.assert_allclose(lp, [np.log(0.25), np.log(0.5)], rtol=1e-6)
    loss_fn = jax.jit(policy_gradient_loss) if jit else policy_gradient_loss
    np.testing.assert_allclose(loss_fn(LOGITS, ACTIONS, ADV), [2.7725887, -0.6931472], rtol=1e-6)


def test_epsilon_correction_hand_computed() -> None:
    # epsilon = 0.25: -log(pi + eps) * adv = [-ln(1/4 + 1/4) * 2, -ln(1/2 + 1/4) * -1]
    #   = [0.6931472 * 2, 0.2876821 * -1] = [1.3862944, -0.2876821]
    loss = policy_gradient_loss(LOGITS, ACTIONS, ADV, log_prob_epsilon=0.25)
    np.testing.assert_allclose(loss, [1.3862944, -0.2876821], rtol=1e-6)


def test_epsilon_correction_bounds_tiny_probabilities() -> None:
    # pi(a) = sigmoid(-100) ~ e^-100: log pi ~ -100, but log(pi + 1e-6) ~ ln(1e-6) = -13.815511.
    logits = np.array([[0.0, -100.0]], np.float32)
    actions, adv = np.array([1]), np.array([1.0], np.float32)
    np.testing.assert_allclose(policy_gradient_loss(logits, actions, adv), [100.0], rtol=1e-6)
    eps_loss_fn = jax.jit(functools.partial(policy_gradient_loss, log_prob_epsilon=1e-6))
    eps_loss = eps_loss_fn(logits, actions, adv)
    np.testing.assert_allclose(eps_loss, [13.815511], rtol=1e-6)


def test_gradient_is_rho_adv_times_grad_log_pi() -> None:
    # d/dlogits of sum_t -log pi(a_t) adv_t = -adv_t (onehot(a_t) - pi_t); no gradient into adv.
    def total(logits, adv):
        return jnp.sum(policy_gradient_loss(logits, ACTIONS, adv))

    g_logits, g_adv = jax.grad(total, argnums=(0, 1))(LOGITS, ADV)
    pi = np.array([[0.25, 0.75], [0.5, 0.5]])
    onehot = np.eye(2)[ACTIONS]
    np.testing.assert_allclose(g_logits, -ADV[:, None] * (onehot - pi), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(g_adv, np.zeros_like(ADV))


def test_zero_epsilon_equals_plain_log_prob_with_gradients() -> None:
    def total(logits, eps):
        return jnp.sum(policy_gradient_loss(logits, ACTIONS, ADV, log_prob_epsilon=eps))

    np.testing.assert_allclose(
        jax.grad(total)(LOGITS, 0.0), jax.grad(lambda lg: total(lg, 0.0))(LOGITS), rtol=1e-6
    )
    np.testing.assert_allclose(total(LOGITS, 0.0), np.sum(-np.log([0.25, 0.5]) * ADV), rtol=1e-6)


def test_entropy_hand_computed() -> None:
    # Row 0: -(1/4 ln 1/4 + 3/4 ln 3/4) = 0.3465736 + 0.2157616 = 0.5623351; row 1: ln 2 = 0.6931472
    np.testing.assert_allclose(entropy(LOGITS), [0.5623351, 0.6931472], rtol=1e-6)


@pytest.mark.parametrize("num_actions", [2, 5, 18])
def test_entropy_of_uniform_is_log_num_actions(num_actions: int) -> None:
    logits = np.full((3, num_actions), 7.3, np.float32)
    np.testing.assert_allclose(jax.jit(entropy)(logits), np.full(3, np.log(num_actions)), rtol=1e-6)


def test_numerically_stable_for_large_and_masked_logits() -> None:
    shifted = LOGITS + 1e4
    np.testing.assert_allclose(log_prob(shifted, ACTIONS), log_prob(LOGITS, ACTIONS), rtol=1e-4)
    masked = np.array([[0.0, 0.0, -np.inf]], np.float32)
    np.testing.assert_allclose(entropy(masked), [np.log(2.0)], rtol=1e-6)
    grad = jax.grad(lambda lg: jnp.sum(entropy(lg)))(masked)
    assert np.all(np.isfinite(grad))
