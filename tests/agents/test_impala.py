"""Tests of the IMPALA config, network, learner (loss plumbing, optimiser, corrections) and actor."""

from __future__ import annotations

import dataclasses
import functools
import math

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rlrepro.agents.impala import (
    ActorCritic,
    Batch,
    ImpalaConfig,
    init,
    make_learner,
    make_network,
    update,
)
from rlrepro.agents.impala.learner import corrected_targets, loss_fn, make_lr_schedule, make_optimizer
from rlrepro.agents.impala.networks import apply_time_major
from rlrepro.environments.jax_envs import make_jax_env
from rlrepro.training.unroll import init_actor, unroll

T, B = 5, 4


def _config(**overrides: object) -> ImpalaConfig:
    base = dict(unroll_length=T, batch_size=B, hidden_sizes=(16,), total_updates=100, max_grad_norm=None)
    base.update(overrides)
    return ImpalaConfig(**base)


@functools.partial(jax.jit, static_argnums=(0, 2))
def _catch_batch(config: ImpalaConfig, params: object, seed: int = 0) -> Batch:
    """An unroll of T steps in B Catch environments acting with ``params``."""
    env = make_jax_env("catch")
    network = make_network(config, env.num_actions)
    actor_key, unroll_key = jax.random.split(jax.random.PRNGKey(seed))
    state = init_actor(actor_key, env, config.batch_size)
    _, batch, _ = unroll(unroll_key, params, state, env=env, network=network, unroll_length=config.unroll_length)
    return batch


def _learner_state(config: ImpalaConfig, seed: int = 0):
    return init(config, jax.random.PRNGKey(seed), (6, 11), 3)


@functools.partial(jax.jit, static_argnums=0)
def _loss_and_metrics(config: ImpalaConfig, params: object, batch: Batch):
    return loss_fn(params, batch, config, make_network(config, batch.behaviour_logits.shape[-1]))


# --- config -----------------------------------------------------------------------------------


def test_config_defaults_follow_the_paper():
    config = ImpalaConfig()
    assert (config.discount, config.unroll_length, config.batch_size) == (0.99, 20, 32)
    assert (config.rmsprop_decay, config.rmsprop_momentum, config.baseline_cost) == (0.99, 0.0, 0.5)
    assert (config.rho_bar, config.c_bar, config.pg_rho_bar, config.lambda_) == (1.0, 1.0, 1.0, 1.0)
    assert config.frames_per_update == 640
    hash(config)  # usable as a static jit argument


@pytest.mark.parametrize(
    "field, value",
    [("correction", "retrace"), ("lr_schedule", "cosine"), ("policy_lag", -1), ("unroll_length", 0),
     ("max_grad_norm", 0.0), ("reward_clip", -1.0), ("hidden_sizes", ())],
)
def test_config_rejects_bad_values_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        ImpalaConfig(**{field: value})


# --- network ----------------------------------------------------------------------------------


def test_network_shapes_and_swappable_torso():
    config = _config()
    network = make_network(config, num_actions=3)
    params = network.init(jax.random.PRNGKey(0), jnp.zeros((1, 6, 11)))
    logits, values = network.apply(params, jnp.zeros((7, 6, 11)))
    chex.assert_shape([logits, values], [(7, 3), (7,)])
    logits_tb, values_tb = apply_time_major(network, params, jnp.zeros((T + 1, B, 6, 11)))
    chex.assert_shape([logits_tb, values_tb], [(T + 1, B, 3), (T + 1, B)])

    class MeanTorso(nn.Module):
        @nn.compact
        def __call__(self, x):
            return jnp.mean(x.reshape(x.shape[0], -1), axis=-1, keepdims=True)

    other = ActorCritic(torso=MeanTorso(), num_actions=3)
    other_params = other.init(jax.random.PRNGKey(0), jnp.zeros((1, 6, 11)))
    chex.assert_shape(other.apply(other_params, jnp.zeros((2, 6, 11)))[0], (2, 3))


# --- loss plumbing ----------------------------------------------------------------------------


def _duplicate_along_batch(batch: Batch) -> Batch:
    return jax.tree.map(lambda x: jnp.concatenate([x, x], axis=1), batch)


def test_losses_are_summed_over_batch_and_time_not_averaged():
    config = _config()
    params = _learner_state(config).params
    batch = _catch_batch(config, _learner_state(config, seed=1).params)  # off-policy: rho != 1
    loss, metrics = _loss_and_metrics(config, params, batch)
    doubled = dataclasses.replace(config, batch_size=2 * B)
    loss2, metrics2 = _loss_and_metrics(doubled, params, _duplicate_along_batch(batch))
    np.testing.assert_allclose(loss2, 2 * loss, rtol=1e-5)
    for name in ("pg_loss", "baseline_loss", "entropy_loss"):
        np.testing.assert_allclose(getattr(metrics2, name), 2 * getattr(metrics, name), rtol=1e-5)
    np.testing.assert_allclose(metrics2.entropy, metrics.entropy, rtol=1e-5)  # a mean, for reporting


def test_baseline_loss_weighs_the_summed_squared_error_by_a_quarter():
    # Every transition terminal (discount 0) and on-policy (rho = 1): v_s = r_s, so the V-trace
    # error is r_s - V(x_s) and baseline_loss = 0.5 (baseline_cost) * 0.5 * sum (r_s - V(x_s))^2.
    config = _config(reward_clip=None)
    params = _learner_state(config).params
    batch = _catch_batch(config, params)
    rewards = jnp.arange(T * B, dtype=jnp.float32).reshape(T, B) / 10.0 - 0.7
    batch = batch._replace(rewards=rewards, dones=jnp.ones((T, B), bool))
    _, values = apply_time_major(make_network(config, 3), params, batch.observations)
    _, metrics = _loss_and_metrics(config, params, batch)
    expected = 0.25 * jnp.sum(jnp.square(rewards - values[:-1]))
    np.testing.assert_allclose(metrics.baseline_loss, expected, rtol=1e-5)


def test_rewards_are_clipped_in_the_learner():
    params = _learner_state(_config()).params
    batch = _catch_batch(_config(), params)
    big = batch._replace(rewards=jnp.full((T, B), 5.0).at[0].set(-3.0))
    unit = batch._replace(rewards=jnp.full((T, B), 1.0).at[0].set(-1.0))
    clipped = _loss_and_metrics(_config(reward_clip=1.0), params, big)[0]
    np.testing.assert_allclose(clipped, _loss_and_metrics(_config(reward_clip=1.0), params, unit)[0], rtol=1e-6)
    unclipped = _loss_and_metrics(_config(reward_clip=None), params, big)[0]
    assert not np.isclose(unclipped, clipped)


def test_linear_lr_schedule_reaches_zero_at_total_updates():
    config = _config(learning_rate=0.1, total_updates=100)
    schedule = make_lr_schedule(config)
    rates = [schedule(0), schedule(50), schedule(100), schedule(150)]
    np.testing.assert_allclose(rates, [0.1, 0.05, 0.0, 0.0], atol=1e-8)
    assert make_lr_schedule(dataclasses.replace(config, lr_schedule="constant"))(100) == pytest.approx(0.1)


def test_learner_reports_the_learning_rate_it_applies_and_stops_at_zero():
    config = _config(learning_rate=0.1, total_updates=2)
    learner = make_learner(config, (6, 11), 3)
    state = learner.init(jax.random.PRNGKey(0))
    batch = _catch_batch(config, state.params)
    rates = []
    for _ in range(3):
        previous = state.params
        state, metrics = jax.jit(learner.update)(state, batch)
        rates.append(float(metrics.learning_rate))
    np.testing.assert_allclose(rates, [0.1, 0.05, 0.0], atol=1e-8)
    chex.assert_trees_all_equal(state.params, previous)  # lr 0: the last update changed nothing
    assert int(state.step) == 3


def test_one_rmsprop_step_matches_tf1_by_hand():
    # Loss 0.5 (w x - y)^2 with w = 2, x = 1.5, y = 0: grad g = (w x - y) x = 4.5.
    # TF1 RMSProp: ms = 0.99 * 1 + 0.01 * g^2 = 0.99 + 0.2025 = 1.1925 (accumulator starts at 1),
    # w' = w - lr * g / sqrt(ms + eps) = 2 - 0.1 * 4.5 / sqrt(1.2025) = 2 - 0.410366... (eps 0.01 inside).
    config = _config(learning_rate=0.1, lr_schedule="constant", rmsprop_epsilon=0.01)
    optimizer = make_optimizer(config)
    w = {"w": jnp.asarray(2.0)}
    grads = jax.grad(lambda p: 0.5 * (p["w"] * 1.5 - 0.0) ** 2)(w)
    np.testing.assert_allclose(grads["w"], 4.5)
    updates, opt_state = optimizer.update(grads, optimizer.init(w), w)
    np.testing.assert_allclose(optax.apply_updates(w, updates)["w"], 2.0 - 0.1 * 4.5 / math.sqrt(1.2025), rtol=1e-6)
    # Second step: ms = 0.99 * 1.1925 + 0.01 * g^2 with the same gradient = 1.383075.
    updates, _ = optimizer.update(grads, opt_state, w)
    np.testing.assert_allclose(updates["w"], -0.1 * 4.5 / math.sqrt(0.99 * 1.1925 + 0.01 * 4.5**2 + 0.01), rtol=1e-6)


def test_gradient_clipping_caps_the_global_norm():
    # Gradients (30, 40) have global norm 50; a clip at 5 scales them to (3, 4) before RMSProp.
    params = {"a": jnp.asarray(0.0), "b": jnp.asarray(0.0)}
    grads = {"a": jnp.asarray(30.0), "b": jnp.asarray(40.0)}
    clipped = make_optimizer(_config(max_grad_norm=5.0, lr_schedule="constant"))
    plain = make_optimizer(_config(max_grad_norm=None, lr_schedule="constant"))
    got, _ = clipped.update(grads, clipped.init(params), params)
    want, _ = plain.update({"a": jnp.asarray(3.0), "b": jnp.asarray(4.0)}, plain.init(params), params)
    chex.assert_trees_all_close(got, want, rtol=1e-6)
    small = {"a": jnp.asarray(0.3), "b": jnp.asarray(0.4)}  # norm 0.5 < 5: untouched
    chex.assert_trees_all_close(
        clipped.update(small, clipped.init(params), params)[0], plain.update(small, plain.init(params), params)[0]
    )


def test_update_is_jittable_and_vmappable_over_seeds():
    config = _config()
    learner = make_learner(config, (6, 11), 3)
    states = jax.vmap(learner.init)(jax.random.split(jax.random.PRNGKey(0), 2))
    batch = _catch_batch(config, jax.tree.map(lambda x: x[0], states.params))
    batches = jax.tree.map(lambda x: jnp.stack([x, x]), batch)
    new_states, metrics = jax.jit(jax.vmap(learner.update))(states, batches)
    chex.assert_shape(metrics.total_loss, (2,))
    alone, alone_metrics = jax.jit(learner.update)(jax.tree.map(lambda x: x[0], states), batch)
    chex.assert_trees_all_close(jax.tree.map(lambda x: x[0], new_states.params), alone.params, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(metrics.total_loss[0], alone_metrics.total_loss, rtol=1e-5)


# --- off-policy corrections -------------------------------------------------------------------

CORRECTIONS = ("vtrace", "one_step_is", "epsilon", "none")


def _updated_params(config: ImpalaConfig, batch: Batch):
    state, metrics = jax.jit(update, static_argnums=0)(config, _learner_state(config), batch)
    return state.params, metrics


def test_all_corrections_give_the_same_update_on_policy():
    config = _config()
    batch = _catch_batch(config, _learner_state(config).params)  # behaviour = current policy
    results = {c: _updated_params(dataclasses.replace(config, correction=c), batch) for c in CORRECTIONS}
    for correction in CORRECTIONS:
        np.testing.assert_allclose(results[correction][1].mean_rho, 1.0, atol=1e-5)
        # epsilon = 1e-6 inside log(pi + eps) moves the gradient by a relative ~eps / pi only.
        chex.assert_trees_all_close(results[correction][0], results["vtrace"][0], rtol=1e-4, atol=1e-6)


def test_corrections_differ_off_policy():
    config = _config(epsilon_correction=0.1)  # a visible epsilon, so that its pg term differs from "none"
    batch = _catch_batch(config, _learner_state(config).params)
    # Behaviour logits of another, sharper policy: rho spreads well beyond the clip at 1.
    behaviour = 3.0 * jax.random.normal(jax.random.PRNGKey(7), batch.behaviour_logits.shape)
    batch = batch._replace(behaviour_logits=behaviour)
    results = {c: _updated_params(dataclasses.replace(config, correction=c), batch) for c in CORRECTIONS}
    flat = {c: jnp.concatenate([x.ravel() for x in jax.tree.leaves(p)]) for c, (p, _) in results.items()}
    for i, first in enumerate(CORRECTIONS):
        for second in CORRECTIONS[i + 1:]:
            assert float(jnp.max(jnp.abs(flat[first] - flat[second]))) > 1e-6, (first, second)


def test_one_step_is_uses_uncorrected_targets_and_a_clipped_rho_weighted_advantage():
    key = jax.random.split(jax.random.PRNGKey(3), 4)
    v_tm1, v_t, r_t = (jax.random.normal(k, (T, B)) for k in key[:3])
    rho = jnp.exp(jax.random.normal(key[3], (T, B)))
    discount = jnp.full((T, B), 0.9).at[2, 1].set(0.0)
    none_errors, none_adv = corrected_targets(_config(correction="none"), v_tm1, v_t, r_t, discount, rho)
    is_errors, is_adv = corrected_targets(_config(correction="one_step_is"), v_tm1, v_t, r_t, discount, rho)
    np.testing.assert_allclose(is_errors, none_errors)
    np.testing.assert_allclose(is_adv, jnp.minimum(1.0, rho) * none_adv, rtol=1e-6)
    # "none" on its own: the n-step return; last step r + gamma V(x_T) - V(x_{T-1}).
    np.testing.assert_allclose(none_adv[-1], r_t[-1] + discount[-1] * v_t[-1] - v_tm1[-1], rtol=1e-5, atol=1e-6)
    vt_errors, _ = corrected_targets(_config(correction="vtrace"), v_tm1, v_t, r_t, discount, rho)
    assert not np.allclose(vt_errors, none_errors)


# --- actor ------------------------------------------------------------------------------------


def test_actor_unroll_layout_and_episode_bookkeeping():
    # Catch episodes last exactly 5 steps and return +-1: with T = 7 every env ends one episode at t = 4.
    config = _config(unroll_length=7)
    env = make_jax_env("catch")
    params = _learner_state(config).params
    state = init_actor(jax.random.PRNGKey(0), env, B)
    new_state, batch, stats = unroll(
        jax.random.PRNGKey(1), params, state, env=env, network=make_network(config, 3), unroll_length=7
    )
    chex.assert_shape([batch.observations, batch.actions, batch.rewards, batch.dones, batch.behaviour_logits],
                      [(8, B, 6, 11), (7, B), (7, B), (7, B), (7, B, 3)])
    np.testing.assert_array_equal(batch.observations[0], state.observation)
    np.testing.assert_array_equal(batch.observations[-1], new_state.observation)
    np.testing.assert_array_equal(stats.ended, batch.dones)
    np.testing.assert_array_equal(np.asarray(stats.ended).sum(0), np.ones(B))
    assert np.all(np.asarray(stats.ended)[4])
    np.testing.assert_array_equal(stats.returns[4], batch.rewards[4])
    assert set(np.abs(np.asarray(stats.returns[4])).tolist()) == {1.0}
    np.testing.assert_array_equal(new_state.episode_return, batch.rewards[5:].sum(0))
    logits, _ = make_network(config, 3).apply(params, batch.observations[0])
    np.testing.assert_allclose(batch.behaviour_logits[0], logits, rtol=1e-6)


def test_rmsprop_semantics_follow_the_spec_fields():
    """eps_in_sqrt and initial_scale reach IMPALA's optimiser (issue 11 item 2); one step on a scalar, g = 2.

    lr 0.1, decay 0.99, eps 0.01, constant schedule. TF1 (eps inside, accumulator from 1):
    nu = 0.99 * 1 + 0.01 * 2^2 = 1.03, step = 0.1 * 2 / sqrt(1.03 + 0.01) = 0.196116.
    PyTorch (eps outside, accumulator from 0): nu = 0.04, step = 0.1 * 2 / (sqrt(0.04) + 0.01) = 0.952381.
    """
    import jax.numpy as jnp
    import optax

    from rlrepro.agents.impala.config import ImpalaConfig
    from rlrepro.agents.impala.learner import make_optimizer

    def step(**rmsprop):
        config = ImpalaConfig(learning_rate=0.1, rmsprop_epsilon=0.01, max_grad_norm=None, lr_schedule="constant", **rmsprop)
        optimizer = make_optimizer(config)
        params = jnp.zeros(())
        updates, _ = optimizer.update(jnp.asarray(2.0), optimizer.init(params), params)
        return -float(optax.apply_updates(params, updates))

    assert step() == pytest.approx(0.196116, rel=1e-5)
    assert step(rmsprop_eps_in_sqrt=False, rmsprop_initial_scale=0.0) == pytest.approx(0.952381, rel=1e-5)


@pytest.mark.parametrize(
    "transform,rewards,expected",
    [
        # 5 tanh(r / 5), times 0.3 where r < 0: r = -5 -> 0.3 * 5 * tanh(-1) = -1.142392; r = 10 -> 5 tanh(2) = 4.820138
        ("soft_asymmetric_code", [-5.0, 0.0, 10.0], [-1.142392, 0.0, 4.820138]),
        # 0.3 min(tanh r, 0) + 5 max(tanh r, 0): r = -1 -> -0.228477; r = 1 -> 3.807971
        ("soft_asymmetric_paper", [-1.0, 0.0, 1.0], [-0.228477, 0.0, 3.807971]),
        ("clip", [-5.0, 0.5, 10.0], [-1.0, 0.5, 1.0]),
    ],
)
def test_reward_transforms_match_the_code_and_fig_d1(transform, rewards, expected):
    import jax.numpy as jnp

    from rlrepro.agents.impala.config import ImpalaConfig
    from rlrepro.agents.impala.learner import transform_rewards

    out = transform_rewards(ImpalaConfig(reward_transform=transform), jnp.asarray(rewards))
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-6)
