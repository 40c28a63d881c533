"""FRODO's returns and consistency loss against hand-computed values (Xu et al. 2020, eqs. 12-13, listing C.4)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.losses import consistency_errors, discounted_returns, lambda_returns, target_actor_critic_terms

R = jnp.array([1.0, 2.0, 0.0, 3.0])
D = jnp.array([0.5, 0.0, 0.5, 0.5])  # an episode ends after step 1


@pytest.mark.parametrize("jit", [False, True])
def test_discounted_returns_by_hand(jit):
    fn = jax.jit(discounted_returns) if jit else discounted_returns
    # G3 = 3 + .5*10 = 8; G2 = 0 + .5*8 = 4; G1 = 2 + 0*4 = 2; G0 = 1 + .5*2 = 2
    np.testing.assert_allclose(fn(R, D, 10.0), [2.0, 2.0, 4.0, 8.0])


def test_lambda_returns_by_hand_and_limits():
    v = jnp.array([1.0, 1.0, 2.0, 4.0])
    # G3 = 3 + .5*4 = 5; G2 = 0 + .5*(.5*2 + .5*5) = 1.75; G1 = 2; G0 = 1 + .5*(.5*1 + .5*2) = 1.75
    np.testing.assert_allclose(lambda_returns(R, D, v, 0.5), [1.75, 2.0, 1.75, 5.0])
    np.testing.assert_allclose(lambda_returns(R, D, v, 0.0), R + D * v)  # one-step TD targets
    np.testing.assert_allclose(lambda_returns(R, D, v, 1.0), discounted_returns(R, D, v[-1]))


def test_consistency_n_step_by_hand_with_episode_boundary():
    g = jnp.array([3.0, 1.0, 4.0, 6.0])
    # corrected n-step (notes §5 item 2): targets = discounted_returns(r[:-1], d[:-1], G[-1])
    #   t2 = 0 + .5*6 = 3; t1 = 2 + 0*3 = 2 (the episode ended: no bootstrap); t0 = 1 + .5*2 = 2
    np.testing.assert_allclose(consistency_errors(R, D, g), [2 - 3, 2 - 1, 3 - 4])
    # listing C.4: discounted_returns(r, d, G[-1])[:-1]: t3' = 3 + .5*6 = 6, t2 = .5*6 = 3, t1 = 2, t0 = 2
    np.testing.assert_allclose(consistency_errors(R, D, g, listing_offbyone=True), [2 - 3, 2 - 1, 3 - 4 + 0.0])
    # one-step (eq. 13): t_k = r_k + d_k G_{k+1}: t0 = 1 + .5*1 = 1.5, t1 = 2 + 0 = 2, t2 = 0 + .5*6 = 3
    np.testing.assert_allclose(consistency_errors(R, D, g, form="one_step"), [1.5 - 3, 2 - 1, 3 - 4])


def test_consistency_offbyone_differs_without_boundary():
    r, d, g = jnp.array([1.0, 1.0, 1.0]), jnp.ones(3), jnp.array([3.0, 2.0, 1.0])
    np.testing.assert_allclose(consistency_errors(r, d, g), [0.0, 0.0])  # exactly self-consistent
    # listing: t1 = 1 + (1 + 1) = 3 (one reward too many), t0 = 4
    np.testing.assert_allclose(consistency_errors(r, d, g, listing_offbyone=True), [1.0, 1.0])


def test_consistency_gradient_reaches_only_g():
    r, d = jnp.array([1.0, 1.0, 1.0]), jnp.ones(3)
    grad = jax.grad(lambda g: 0.5 * jnp.sum(consistency_errors(r, d, g) ** 2))(jnp.array([0.0, 0.0, 0.0]))
    # errors = [2 - G0, 1 - G1] with the targets constant: dL/dG = -(errors) on G0, G1 and 0 on G2
    np.testing.assert_allclose(grad, [-2.0, -1.0, 0.0])


def test_actor_critic_terms_semi_gradient_on_value_in_pg():
    logits, a, g = jnp.zeros((2, 3)), jnp.array([0, 1]), jnp.array([1.0, -1.0])
    grad_v = jax.grad(lambda v: jnp.sum(target_actor_critic_terms(logits, a, v, g).pg))(jnp.zeros(2))
    np.testing.assert_allclose(grad_v, [0.0, 0.0])
    terms = target_actor_critic_terms(logits, a, jnp.zeros(2), g)
    np.testing.assert_allclose(terms.pg, -g * np.log(1 / 3), rtol=1e-6)
    np.testing.assert_allclose(terms.baseline, 0.5 * g**2)
