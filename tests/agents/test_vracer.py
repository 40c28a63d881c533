"""V-RACER + ReF-ER learner: each rule's gradient masks (§3-4, notes §6), and the spec -> config path."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.losses.refer import initial_beta, next_beta
from rlrepro.training.refer_config import ReferConfig
from rlrepro.agents.vracer import learner as vlearner
from rlrepro.agents.vracer.config import VRacerConfig
from rlrepro.agents.vracer.networks import VRacerNetwork
from rlrepro.losses.refer import behaviour_kl
from rlrepro.specs.agents.refer import VRacerAgentSpec

OBS, ACT = 3, 2


def _setup(variant: str):
    config = VRacerConfig(rules=ReferConfig(variant=variant), hidden_sizes=(8,), batch_size=2)
    params = vlearner.init(config, jax.random.key(0), OBS, ACT).params
    v, mean, std = VRacerNetwork(config.hidden_sizes, ACT, config.init_std).apply(params, jnp.ones((2, OBS)))
    # sample 0: near (mu = the current policy, a at its mean: rho = 1); sample 1: far (mu's mean 3 std away, rho ~ e^-4.5)
    batch = vlearner.Batch(
        obs=jnp.ones((2, OBS)),
        action=mean,
        mu_mean=jnp.stack([mean[0], mean[1] + 3 * std]),
        mu_std=jnp.stack([std, std]),
        q_ret=jnp.array([1.0, 1.0]),
    )
    return config, params, batch, std


def _grads(config, params, batch, beta):
    return jax.grad(lambda p: vlearner.loss_fn(p, config, ACT, batch, jnp.float32(beta), jnp.float32(2.0))[0])(params)


def _only(batch, i):
    return jax.tree.map(lambda x: x[i : i + 1], batch)


def _kl_grads(params, batch, config, weight):
    def loss(p):
        _, mean, std = VRacerNetwork(config.hidden_sizes, ACT, config.init_std).apply(p, batch.obs)
        return weight * jnp.mean(jax.vmap(lambda m, mm, ms: behaviour_kl(mm, ms, m, std))(mean, batch.mu_mean, batch.mu_std))

    return jax.grad(loss)(params)


def _allclose(a, b, **kw):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(x, y, **kw)


def test_far_sample_gives_only_the_kl_gradient_with_refer():
    config, params, batch, _ = _setup("refer")
    far = _only(batch, 1)
    _allclose(_grads(config, params, far, 0.7), _kl_grads(params, far, config, 0.3), rtol=1e-5, atol=1e-8)


def test_rule1_alone_zeroes_every_gradient_of_a_far_sample():
    config, params, batch, _ = _setup("refer1")
    assert all(float(jnp.abs(g).max()) == 0.0 for g in jax.tree.leaves(_grads(config, params, _only(batch, 1), 0.7)))
    er_config = dataclasses.replace(config, rules=ReferConfig(variant="er"))
    assert max(float(jnp.abs(g).max()) for g in jax.tree.leaves(_grads(er_config, params, _only(batch, 1), 1.0))) > 0


def test_beta_one_is_the_base_algorithm_on_near_samples_and_beta_zero_pure_kl():
    config, params, batch, _ = _setup("refer")
    er = dataclasses.replace(config, rules=ReferConfig(variant="er"))
    near = _only(batch, 0)
    _allclose(_grads(config, params, near, 1.0), _grads(er, params, near, 1.0), rtol=1e-6)
    _allclose(_grads(config, params, batch, 0.0), _kl_grads(params, batch, config, 1.0), rtol=1e-5, atol=1e-8)


def test_beta_state_per_variant():
    refer, refer1 = ReferConfig(variant="refer", beta0=0.5), ReferConfig(variant="refer1", beta0=0.5)
    np.testing.assert_array_equal(initial_beta(refer, 2), [0.5, 0.5])
    np.testing.assert_array_equal(initial_beta(refer1, 2), [1.0, 1.0])  # rule 1 alone never scales the gradient
    # eq. 12 at eta(t) = 0.1: far 0.3 > D -> 0.45; far 0.0 -> 0.55; fixed rate 1e-4: 0.5 * (1 - 1e-4) = 0.49995
    np.testing.assert_allclose(next_beta(refer, np.array([0.5, 0.5]), np.array([0.3, 0.0]), 0.1), [0.45, 0.55], rtol=1e-6)
    fixed = dataclasses.replace(refer, beta_rate="fixed")
    np.testing.assert_allclose(next_beta(fixed, np.array([0.5]), np.array([0.3]), 0.1), [0.49995], rtol=1e-6)
    np.testing.assert_array_equal(next_beta(refer1, np.array([1.0]), np.array([0.9]), 0.1), [1.0])


def test_every_spec_field_reaches_the_config():
    spec = VRacerAgentSpec.model_validate(
        {"kind": "vracer", "rules": {"variant": "refer2", "c": 2.0, "d": 0.05, "a": 1e-6, "beta0": 0.3, "beta_rate": "fixed",
                                     "beta_rate_fixed": 2e-4, "kl_direction": "pi_mu", "rho_cap": 1000.0},
         "replay": {"capacity": 1000, "n_start": 100, "refresh_period": 50}, "hidden_sizes": [16, 8], "init_std": 0.3,
         "learning_rate": 3e-4, "adam_eps": 1e-6, "discount": 0.99, "batch_size": 64, "truncation": 2.5}
    )
    config = VRacerConfig.from_spec(spec)
    assert config.rules == ReferConfig("refer2", 2.0, 0.05, 1e-6, 0.3, "fixed", 2e-4, "pi_mu", 1000.0)
    assert (config.capacity, config.n_start, config.refresh_period) == (1000, 100, 50)
    assert (config.hidden_sizes, config.init_std, config.learning_rate, config.adam_eps) == ((16, 8), 0.3, 3e-4, 1e-6)
    assert (config.discount, config.batch_size, config.truncation) == (0.99, 64, 2.5)


def test_initial_std_is_sqrt_point_two():
    config = VRacerConfig(hidden_sizes=(8,))
    params = vlearner.init(config, jax.random.key(0), OBS, ACT).params
    _, mean, std = VRacerNetwork(config.hidden_sizes, ACT, config.init_std).apply(params, jnp.ones(OBS))
    np.testing.assert_allclose(std, [0.447214, 0.447214], rtol=1e-5)
    assert float(jnp.abs(mean).max()) < 0.1  # App. A: near-zero output layer


def test_a_host_resumed_from_its_checkpoint_continues_exactly_as_if_never_stopped(tmp_path):
    """The runner's checkpoint path (``checkpoint.save``, then ``restore`` into a fresh host state): the memories
    come back as rows of one bank again, and the next steps' metrics, parameters and memories are bit for bit those
    of the run that did not stop (FIFO evictions, refreshes and write-backs on both sides of the checkpoint)."""
    pytest.importorskip("mujoco")
    from rlrepro.replay.episodes import ReplayBank
    from rlrepro.agents.vracer.loop import HostVRacer
    from rlrepro.specs import load_spec
    from rlrepro.specs.loading import resolve_env
    from rlrepro.jobs import checkpoint

    env = resolve_env(load_spec("specs/refer/mujoco_vracer.yaml"), "inverted_pendulum", "smoke")
    config = VRacerConfig(rules=ReferConfig(variant="refer"), capacity=60, n_start=40, batch_size=8,
                          hidden_sizes=(8,), refresh_period=20)
    host = HostVRacer(config, env)
    state, _ = host.run(host.init([0, 1]), 55)
    checkpoint.save(tmp_path / "host.ckpt", state, {})
    resumed = checkpoint.restore(tmp_path / "host.ckpt", host.init([0, 1]))
    assert all(np.shares_memory(r.v, resumed.host.bank.v) for r in resumed.host.replays)
    state, metrics = host.run(state, 45)
    resumed, resumed_metrics = host.run(resumed, 45)
    for name, a, b in zip(metrics._fields, metrics, resumed_metrics):
        np.testing.assert_array_equal(a, b, err_msg=name)
    for a, b in zip(jax.tree.leaves(state.learner), jax.tree.leaves(resumed.learner)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(state.host.replays, resumed.host.replays):
        assert (a.n_far, a.committed, a.head, a.reward_scale) == (b.n_far, b.committed, b.head, b.reward_scale)
        for name in ReplayBank.FIELDS:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert state.host.replays[0].head > 0  # evictions happened
