"""NAF + ReF-ER: eq. 4, far samples give only the KL on the mean, rule 2 beta-mixes only the mean outputs' TD gradient."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.agents.ddpg.learner import Batch
from rlrepro.agents.naf import learner as nlearner
from rlrepro.agents.naf.config import NAFConfig
from rlrepro.agents.naf.networks import NAFNetwork, naf_q
from rlrepro.agents.refer.rules import ReferConfig
from rlrepro.specs.agents.refer import NAFAgentSpec

OBS, ACT = 3, 2


def test_naf_q_hand_value():
    # V = 1, m = (0, 0), L = [[2, 0], [1, 1]], a = (1, 1): L^T (a - m) = (2 + 1, 1) = (3, 1); Q = 1 - (9 + 1) = -9
    q = naf_q(jnp.float32(1.0), jnp.zeros(2), jnp.array([[2.0, 0.0], [1.0, 1.0]]), jnp.ones(2))
    assert float(q) == pytest.approx(-9.0)


def _setup(variant: str, shift: float):
    config = NAFConfig(rules=ReferConfig(variant=variant), hidden_sizes=(8,))
    state = nlearner.init(config, jax.random.key(0), OBS, ACT)
    obs = jnp.ones((1, OBS))
    _, m, _ = NAFNetwork(config.hidden_sizes, ACT).apply(state.params, obs)
    a = m + 0.1
    batch = Batch(obs, a, jnp.array([1.0]), jnp.array([0.9]), obs * 0.5, m + shift)  # mu's mean shifted from pi's
    return config, state, batch


def _grads(config, state, batch, beta):
    f = lambda p: nlearner.loss_fn(p, state.target, config, ACT, batch, jnp.float32(beta), jnp.float32(2.0))[0]
    return jax.grad(f)(state.params)


def test_rule2_scales_only_the_mean_outputs_td_gradient():
    config, state, batch = _setup("refer2", shift=0.0)  # mu = pi: KL gradient 0, rho = 1
    g1, g0 = _grads(config, state, batch, 1.0), _grads(config, state, batch, 0.0)
    out1, out0 = g1["params"]["Dense_0"]["kernel"], g0["params"]["Dense_0"]["kernel"]  # the output layer (created first: Dense_0), [8, 1 + A + 3]
    np.testing.assert_allclose(out0[:, 0], out1[:, 0], rtol=1e-6)  # V: unscaled
    np.testing.assert_allclose(out0[:, 1 + ACT :], out1[:, 1 + ACT :], rtol=1e-6)  # L: unscaled
    assert float(jnp.abs(out1[:, 1 : 1 + ACT]).max()) > 0 and float(jnp.abs(out0[:, 1 : 1 + ACT]).max()) == 0.0  # m: beta


def test_far_sample_gives_only_the_kl_gradient_on_the_mean():
    config, state, batch = _setup("refer", shift=0.6)  # log rho far below -log 2: far
    beta = 0.7
    g = _grads(config, state, batch, beta)["params"]["Dense_0"]["kernel"]
    assert float(jnp.abs(g[:, 0]).max()) == 0.0 and float(jnp.abs(g[:, 1 + ACT :]).max()) == 0.0

    def kl(p):  # (1 - beta) ||m - m_mu||^2 / (2 sigma^2)
        _, m, _ = NAFNetwork(config.hidden_sizes, ACT).apply(p, batch.obs)
        return (1 - beta) * jnp.sum((m - batch.mu_mean) ** 2) / (2 * 0.2**2)

    np.testing.assert_allclose(g, jax.grad(kl)(state.params)["params"]["Dense_0"]["kernel"], rtol=1e-5, atol=1e-9)


def test_every_spec_field_reaches_the_config():
    spec = NAFAgentSpec.model_validate(
        {"kind": "naf", "rules": {"variant": "refer1"}, "replay": {"capacity": 500, "n_start": 50, "refresh_period": 10},
         "hidden_sizes": [16], "learning_rate": 3e-4, "anneal_learning_rate": False, "adam_eps": 1e-6, "discount": 0.99,
         "batch_size": 64, "target_rate": 0.05, "sigma": 0.3}
    )
    config = NAFConfig.from_spec(spec)
    assert config.rules.variant == "refer1" and (config.capacity, config.n_start, config.refresh_period) == (500, 50, 10)
    expected = dict(hidden_sizes=(16,), learning_rate=3e-4, anneal_learning_rate=False, adam_eps=1e-6, discount=0.99,
                    batch_size=64, target_rate=0.05, sigma=0.3)
    assert {k: getattr(config, k) for k in expected} == expected
    assert dataclasses.replace(config).policy_learning_rate == 3e-4
