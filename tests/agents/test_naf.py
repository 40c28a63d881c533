"""NAF + ReF-ER: eq. 4, far samples give only the KL on the mean, rule 2 beta-mixes the whole TD gradient (eq. 10) or
only the mean outputs' (smarties@2019, ``rule2_gradient: mean_only``)."""

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
from rlrepro.training.refer_config import ReferConfig
from rlrepro.specs.agents.refer import NAFAgentSpec

OBS, ACT = 3, 2


def test_naf_q_hand_value():
    # V = 1, m = (0, 0), L = [[2, 0], [1, 1]], a = (1, 1): L^T (a - m) = (2 + 1, 1) = (3, 1); Q = 1 - (9 + 1) = -9
    q = naf_q(jnp.float32(1.0), jnp.zeros(2), jnp.array([[2.0, 0.0], [1.0, 1.0]]), jnp.ones(2))
    assert float(q) == pytest.approx(-9.0)


def _setup(variant: str, shift: float, rule2_gradient: str = "whole"):
    config = NAFConfig(rules=ReferConfig(variant=variant), hidden_sizes=(8,), rule2_gradient=rule2_gradient)
    state = nlearner.init(config, jax.random.key(0), OBS, ACT)
    obs = jnp.ones((1, OBS))
    _, m, _ = NAFNetwork(config.hidden_sizes, ACT).apply(state.params, obs)
    a = m + 0.1
    batch = Batch(obs, a, jnp.array([1.0]), jnp.array([0.9]), obs * 0.5, m + shift)  # mu's mean shifted from pi's
    return config, state, batch


def _grads(config, state, batch, beta):
    f = lambda p: nlearner.loss_fn(p, state.target, config, ACT, batch, jnp.float32(beta), jnp.float32(2.0))[0]
    return jax.grad(f)(state.params)


def test_rule2_mean_only_scales_only_the_mean_outputs_td_gradient():
    config, state, batch = _setup("refer2", shift=0.0, rule2_gradient="mean_only")  # mu = pi: KL gradient 0, rho = 1
    g1, g0 = _grads(config, state, batch, 1.0), _grads(config, state, batch, 0.0)
    out1, out0 = g1["params"]["Dense_0"]["kernel"], g0["params"]["Dense_0"]["kernel"]  # the output layer (created first: Dense_0), [8, 1 + A + 3]
    np.testing.assert_allclose(out0[:, 0], out1[:, 0], rtol=1e-6)  # V: unscaled
    np.testing.assert_allclose(out0[:, 1 + ACT :], out1[:, 1 + ACT :], rtol=1e-6)  # L: unscaled
    assert float(jnp.abs(out1[:, 1 : 1 + ACT]).max()) > 0 and float(jnp.abs(out0[:, 1 : 1 + ACT]).max()) == 0.0  # m: beta


def test_rule2_whole_scales_every_outputs_td_gradient_by_beta():
    config, state, batch = _setup("refer2", shift=0.0)  # eq. 10 (the default); mu = pi: KL gradient 0
    g1, g_half = _grads(config, state, batch, 1.0), _grads(config, state, batch, 0.5)
    out1, out_half = g1["params"]["Dense_0"]["kernel"], g_half["params"]["Dense_0"]["kernel"]
    assert float(jnp.abs(out1).max()) > 0
    np.testing.assert_allclose(out_half, 0.5 * out1, rtol=1e-5, atol=1e-9)  # V, m and L alike


@pytest.mark.parametrize(
    "rule2_gradient, near, expected",
    [
        # V = 1, m = 0.2, L = [[2]], a = 0.5, y = 0, beta = 0.25, sigma = 0.2, m_mu = 0.1, rule refer:
        #   Q = 1 - (0.3 * 2)^2 = 0.64, delta = 0.64; dQ/dV = 1, dQ/dm = 2 (a - m) L^2 = 2.4, dQ/dL = -2 (a - m)^2 L = -0.36
        #   KL = (m - m_mu)^2 / (2 sigma^2) = 0.125, dKL/dm = (m - m_mu) / sigma^2 = 2.5
        # whole (eq. 10), near: L = beta delta^2 / 2 + (1 - beta) KL = 0.25 * 0.2048 + 0.75 * 0.125 = 0.14495
        #   dV = beta delta = 0.16; dm = beta delta 2.4 + (1 - beta) 2.5 = 0.384 + 1.875 = 2.259; dL = 0.16 * -0.36 = -0.0576
        ("whole", 1.0, (0.14495, 0.16, 2.259, -0.0576)),
        # mean_only (smarties): V and L get the unscaled delta: dV = 0.64, dL = 0.64 * -0.36 = -0.2304; dm as above;
        # the value is delta^2 / 2 + (1 - beta) KL = 0.2048 + 0.09375 = 0.29855
        ("mean_only", 1.0, (0.29855, 0.64, 2.259, -0.2304)),
        # a far sample: only the KL, L = 0.09375, dm = 1.875, either way
        ("whole", 0.0, (0.09375, 0.0, 1.875, 0.0)),
        ("mean_only", 0.0, (0.09375, 0.0, 1.875, 0.0)),
    ],
)
def test_rule2_gradient_by_hand(rule2_gradient, near, expected):
    config = NAFConfig(rules=ReferConfig(variant="refer"), sigma=0.2, rule2_gradient=rule2_gradient)
    batch = Batch(jnp.zeros((1, 1)), jnp.array([[0.5]]), jnp.zeros(1), jnp.zeros(1), jnp.zeros((1, 1)), jnp.array([[0.1]]))

    def loss(v, m, l):
        return nlearner.sample_losses(config, v, m, l, jnp.zeros(1), batch, jnp.array([near]), jnp.float32(0.25))[0][0]

    args = (jnp.array([1.0]), jnp.array([[0.2]]), jnp.array([[[2.0]]]))
    for fn in (loss, jax.jit(loss)):
        value, (dv, dm, dl) = jax.value_and_grad(fn, argnums=(0, 1, 2))(*args)
        got = (float(value), float(dv[0]), float(dm[0, 0]), float(dl[0, 0, 0]))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


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
         "batch_size": 64, "target_rate": 0.05, "sigma": 0.3, "rule2_gradient": "mean_only"}
    )
    config = NAFConfig.from_spec(spec)
    assert config.rules.variant == "refer1" and (config.capacity, config.n_start, config.refresh_period) == (500, 50, 10)
    expected = dict(hidden_sizes=(16,), learning_rate=3e-4, anneal_learning_rate=False, adam_eps=1e-6, discount=0.99,
                    batch_size=64, target_rate=0.05, sigma=0.3, rule2_gradient="mean_only")
    assert {k: getattr(config, k) for k in expected} == expected
    assert dataclasses.replace(config).policy_learning_rate == 3e-4
