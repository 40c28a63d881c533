"""DDPG + ReF-ER (Alg. 4): the critic is masked on far samples but not beta-scaled; the policy's far gradient is KL only."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.agents.ddpg import learner as dlearner
from rlrepro.agents.ddpg.config import DDPGConfig
from rlrepro.agents.ddpg.networks import PolicyNetwork
from rlrepro.training.refer_config import ReferConfig
from rlrepro.specs.agents.refer import DDPGAgentSpec

OBS, ACT = 3, 2


def _setup(variant: str, far: bool):
    config = DDPGConfig(rules=ReferConfig(variant=variant), hidden_sizes=(8,))
    state = dlearner.init(config, jax.random.key(0), OBS, ACT)
    obs = jnp.ones((1, OBS))
    mean = PolicyNetwork(config.hidden_sizes, ACT).apply(state.policy, obs)
    # a = mu's mean; far: mu's mean 0.5 away per dimension (log rho = -(0.5^2 * 2) / (2 * 0.04) = -12.5 -> clipped -7)
    mu_mean = mean + (0.5 if far else 0.0)
    batch = dlearner.Batch(obs, mu_mean, jnp.array([1.0]), jnp.array([0.9]), obs * 0.5, mu_mean)
    return config, state, batch


def _critic_grads(config, state, batch, beta):
    mean = PolicyNetwork(config.hidden_sizes, ACT).apply(state.policy, batch.obs)
    _, near, _ = dlearner._pi_terms(config, mean, batch, jnp.float32(2.0))
    del beta  # the critic loss has no beta: Alg. 4
    return jax.grad(dlearner.critic_loss, has_aux=True)(state.critic, state, config, ACT, batch, near)[0]


def _policy_grads(config, state, batch, beta):
    return jax.grad(lambda p: dlearner.policy_loss(p, state, config, ACT, batch, jnp.float32(beta), jnp.float32(2.0))[0])(state.policy)


def _norm(tree) -> float:
    return max(float(jnp.abs(g).max()) for g in jax.tree.leaves(tree))


@pytest.mark.parametrize("variant,critic_on_far", [("refer", False), ("refer1", False), ("refer2", True), ("er", True)])
def test_critic_is_masked_on_far_samples_only_under_rule1(variant, critic_on_far):
    config, state, batch = _setup(variant, far=True)
    assert (_norm(_critic_grads(config, state, batch, 0.5)) > 0) == critic_on_far


def test_near_critic_gradient_does_not_depend_on_beta_but_the_update_uses_it_for_the_policy():
    config, state, batch = _setup("refer", far=False)
    out = {}
    for beta in (0.3, 1.0):
        new, _ = dlearner.update(config, ACT, state, batch, jnp.float32(beta), jnp.float32(2.0), 1.0)
        out[beta] = new
    for a, b in zip(jax.tree.leaves(out[0.3].critic), jax.tree.leaves(out[1.0].critic)):
        np.testing.assert_array_equal(a, b)  # critic step identical whatever beta (not beta-scaled)
    assert any(float(jnp.abs(a - b).max()) > 0 for a, b in zip(jax.tree.leaves(out[0.3].policy), jax.tree.leaves(out[1.0].policy)))


def test_far_policy_gradient_is_the_weighted_kl_gradient_with_the_hand_value():
    config, state, batch = _setup("refer", far=True)
    beta = 0.6

    def kl_loss(p):
        m = PolicyNetwork(config.hidden_sizes, ACT).apply(p, batch.obs)
        return (1 - beta) * jnp.sum((m - batch.mu_mean) ** 2) / (2 * 0.2**2)

    for a, b in zip(jax.tree.leaves(_policy_grads(config, state, batch, beta)), jax.tree.leaves(jax.grad(kl_loss)(state.policy))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-9)
    mean = PolicyNetwork(config.hidden_sizes, ACT).apply(state.policy, batch.obs)
    _, near, kl = dlearner._pi_terms(config, mean, batch, jnp.float32(2.0))
    # KL = ||m - m_mu||^2 / (2 sigma^2) = (0.25 + 0.25) / 0.08 = 6.25
    assert float(near[0]) == 0.0 and float(kl[0]) == pytest.approx(6.25, rel=1e-5)


def test_every_spec_field_reaches_the_config():
    spec = DDPGAgentSpec.model_validate(
        {"kind": "ddpg", "rules": {"variant": "er", "c": 2.0}, "replay": {"capacity": 500, "n_start": 50, "refresh_period": 10},
         "hidden_sizes": [16], "policy_learning_rate": 2e-5, "critic_learning_rate": 3e-4, "critic_weight_decay": 0.0,
         "anneal_learning_rate": False, "adam_eps": 1e-6, "discount": 0.99, "batch_size": 64, "target_rate": 0.05,
         "sigma": 0.3, "exploration": "ornstein_uhlenbeck", "ou_theta": 0.2}
    )
    config = DDPGConfig.from_spec(spec)
    assert config.rules.variant == "er" and config.rules.c == 2.0
    assert (config.capacity, config.n_start, config.refresh_period, config.hidden_sizes) == (500, 50, 10, (16,))
    expected = dict(policy_learning_rate=2e-5, critic_learning_rate=3e-4, critic_weight_decay=0.0, anneal_learning_rate=False,
                    adam_eps=1e-6, discount=0.99, batch_size=64, target_rate=0.05, sigma=0.3, exploration="ornstein_uhlenbeck",
                    ou_theta=0.2)
    assert {k: getattr(config, k) for k in expected} == expected
    assert dataclasses.replace(config) == config
