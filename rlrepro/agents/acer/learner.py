"""Continuous ACER learner (Wang et al. 2017, Alg. 3 with §5's continuous-action pieces): ``init`` and ``update``
pure functions, jit-able and vmappable over seeds.

One ``update`` is one gradient step on B sampled windows of L steps ([B, L] arrays, ``mask`` = 0 on padding):

- the stochastic dueling network Q~(s, a) = V(s) + A(s, a) - mean_i A(s, u_i), u_i ~ pi (n = ``advantage_samples``);
- Retrace targets Q^ret with c_t = min(1, rho_t^(1/d)) and Q^opc with c_t = 1, backwards through each window;
- critic: the gradient (Q^ret - Q~) grad Q~ + min(1, rho) (Q^ret - Q~) grad V (value and advantage networks);
- policy: on each step's statistics phi = (mean, std), g = min(c, rho)(Q^opc - V) grad log pi(a_t) + [1 - c/rho(a')]_+
  (Q~(s, a') - V) grad log pi(a') with one a' ~ pi, projected by the efficient trust region around the average
  policy network (k = grad_phi KL(f(phi_avg) || f(phi)), delta), then back-propagated through the policy network;
- three Adam steps with their own learning rates eta(t) (eq. 13 of the ReF-ER paper, passed in), then the average
  policy network's soft update phi_avg <- alpha phi + (1 - alpha) phi_avg.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlrepro.agents.acer.config import ACERConfig
from rlrepro.agents.acer.networks import AdvantageNetwork, PolicyNetwork, ValueNetwork
from rlrepro.losses.acer import (
    acer_policy_statistics_gradient,
    retrace_q_ret,
    stochastic_dueling_q,
    trace_coefficients,
    truncation_with_bias_correction_gains,
    value_target,
)
from rlrepro.losses.refer import gaussian_kl, gaussian_log_prob
from rlrepro.training.optim import learning_or_frozen


class LearnerState(NamedTuple):
    policy_params: Any
    average_policy_params: Any
    value_params: Any
    advantage_params: Any
    policy_opt: Any
    value_opt: Any
    advantage_opt: Any


class Batch(NamedTuple):
    """B windows of L steps of one seed, step t: s_t (standardised) -> a_t (network units), mu_t = (mean, std),
    r_t (scaled), s_{t+1} (the final observation where a truncated episode ends); ``discount`` 0 where s_{t+1} is a
    true terminal; ``continue_`` 0 at a window's last real step (the trace is cut there); ``mask`` 0 on padding."""

    obs: jax.Array
    next_obs: jax.Array
    action: jax.Array
    mu_mean: jax.Array
    mu_std: jax.Array
    reward: jax.Array
    discount: jax.Array
    continue_: jax.Array
    mask: jax.Array


class UpdateMetrics(NamedTuple):
    """Over the update's real steps: the critic loss 1/2 (Q^ret - Q~)^2, the mean D_KL(mu || pi) of the sampled
    steps (an estimate of the memory's, the quantity of the ReF-ER paper's Fig. 5), the mean of min(c, rho), the
    fraction of steps whose trust-region constraint was active, and the policy's mean std."""

    critic_loss: jax.Array
    kl: jax.Array
    truncated_rho: jax.Array
    trust_region_active: jax.Array
    std: jax.Array


def make_policy(config: ACERConfig, action_dim: int) -> PolicyNetwork:
    return PolicyNetwork(config.hidden_sizes, action_dim, config.init_std)


def make_value(config: ACERConfig) -> ValueNetwork:
    return ValueNetwork(config.hidden_sizes)


def make_advantage(config: ACERConfig) -> AdvantageNetwork:
    return AdvantageNetwork(config.hidden_sizes)


def make_optimizer(config: ACERConfig, learning_rate: float) -> optax.GradientTransformation:
    optimizer = optax.inject_hyperparams(optax.adam)(learning_rate=learning_rate, eps=config.adam_eps)
    return learning_or_frozen(optimizer, config.learning)


def init(config: ACERConfig, key: jax.Array, obs_dim: int, action_dim: int) -> LearnerState:
    """The three networks; the average policy network starts as a copy of the policy."""
    policy_key, value_key, advantage_key = jax.random.split(key, 3)
    obs, action = jnp.zeros((obs_dim,), jnp.float32), jnp.zeros((action_dim,), jnp.float32)
    policy_params = make_policy(config, action_dim).init(policy_key, obs)
    value_params = make_value(config).init(value_key, obs)
    advantage_params = make_advantage(config).init(advantage_key, obs, action)
    return LearnerState(
        policy_params, policy_params, value_params, advantage_params,
        make_optimizer(config, config.policy_learning_rate).init(policy_params),
        make_optimizer(config, config.value_learning_rate).init(value_params),
        make_optimizer(config, config.advantage_learning_rate).init(advantage_params),
    )


def _masked_mean(x: jax.Array, mask: jax.Array) -> jax.Array:
    return jnp.sum(x * mask) / jnp.maximum(jnp.sum(mask), 1.0)


_log_prob = jax.vmap(jax.vmap(gaussian_log_prob))  # over [B, L]
_kl = jax.vmap(jax.vmap(gaussian_kl))


def loss_fn(
    params: tuple[Any, Any, Any], average_policy_params: Any, config: ACERConfig, action_dim: int, batch: Batch,
    key: jax.Array,
) -> tuple[jax.Array, UpdateMetrics]:
    """The critic loss plus the policy's surrogate -z* . phi (each network's gradient is its own term's)."""
    policy_params, value_params, advantage_params = params
    policy = make_policy(config, action_dim)
    mean, std = policy.apply(policy_params, batch.obs)
    std = jnp.broadcast_to(std, mean.shape)
    avg_mean, avg_std = policy.apply(average_policy_params, batch.obs)
    avg_std = jnp.broadcast_to(avg_std, avg_mean.shape)
    v = make_value(config).apply(value_params, batch.obs)
    v_next = jax.lax.stop_gradient(make_value(config).apply(value_params, batch.next_obs))

    # a' (index 0) for the bias correction and u_1..u_n for the SDN, all ~ pi(.|s_t); no gradient through them.
    n = config.advantage_samples
    noise = jax.random.normal(key, (*mean.shape[:-1], 1 + n, action_dim))
    samples = jax.lax.stop_gradient(mean[..., None, :] + std[..., None, :] * noise)
    actions = jnp.concatenate([batch.action[..., None, :], samples], axis=-2)  # [B, L, 2 + n, A]
    obs = jnp.broadcast_to(batch.obs[..., None, :], (*actions.shape[:-1], batch.obs.shape[-1]))
    adv = make_advantage(config).apply(advantage_params, obs, actions)  # [B, L, 2 + n]
    q_tilde = stochastic_dueling_q(v, adv[..., 0], adv[..., 2:])
    adv_sample = adv[..., 1] - jnp.mean(adv[..., 2:], axis=-1)  # Q~(s, a') - V(s)

    log_rho = _log_prob(batch.action, mean, std) - _log_prob(batch.action, batch.mu_mean, batch.mu_std)
    sample = samples[..., 0, :]
    log_rho_sample = _log_prob(sample, mean, std) - _log_prob(sample, batch.mu_mean, batch.mu_std)
    targets = (batch.reward, batch.discount, batch.continue_, v_next, q_tilde)
    q_ret = jax.vmap(retrace_q_ret)(*targets, trace_coefficients(log_rho, action_dim))
    q_opc = jax.vmap(retrace_q_ret)(*targets, jnp.ones_like(log_rho))

    q_error = q_ret - q_tilde
    v_target = value_target(q_ret, q_tilde, v, log_rho)
    critic_loss = _masked_mean(0.5 * q_error**2 + 0.5 * (v_target - v) ** 2, batch.mask)

    gain_taken, gain_sample = truncation_with_bias_correction_gains(
        log_rho, q_opc, jax.lax.stop_gradient(v), log_rho_sample, jax.lax.stop_gradient(adv_sample),
        config.importance_clip,
    )
    project = jax.vmap(jax.vmap(acer_policy_statistics_gradient, in_axes=(0,) * 8 + (None,)), in_axes=(0,) * 8 + (None,))
    phi = jax.lax.stop_gradient((mean, std))
    z_mean, z_std, active = project(*phi, avg_mean, avg_std, batch.action, sample, gain_taken, gain_sample,
                                    config.trust_region_delta)
    policy_loss = -_masked_mean(jnp.sum(z_mean * mean + z_std * std, axis=-1), batch.mask)
    metrics = UpdateMetrics(
        critic_loss=_masked_mean(0.5 * q_error**2, batch.mask),
        kl=_masked_mean(_kl(batch.mu_mean, batch.mu_std, mean, std), batch.mask),
        truncated_rho=_masked_mean(jnp.minimum(config.importance_clip, jnp.exp(log_rho)), batch.mask),
        trust_region_active=_masked_mean(active.astype(jnp.float32), batch.mask),
        std=jnp.mean(std),
    )
    return critic_loss + policy_loss, jax.tree.map(jax.lax.stop_gradient, metrics)


def update(
    config: ACERConfig, action_dim: int, state: LearnerState, batch: Batch, key: jax.Array,
    policy_learning_rate: jax.Array, value_learning_rate: jax.Array, advantage_learning_rate: jax.Array,
) -> tuple[LearnerState, UpdateMetrics]:
    """One gradient step of the three networks at eta(t), then the average policy network's soft update."""
    params = (state.policy_params, state.value_params, state.advantage_params)
    grads, metrics = jax.grad(loss_fn, has_aux=True)(params, state.average_policy_params, config, action_dim, batch, key)
    new_params, new_opts = [], []
    for p, g, opt, lr, base in zip(
        params, grads, (state.policy_opt, state.value_opt, state.advantage_opt),
        (policy_learning_rate, value_learning_rate, advantage_learning_rate),
        (config.policy_learning_rate, config.value_learning_rate, config.advantage_learning_rate),
    ):
        opt.hyperparams["learning_rate"] = jnp.asarray(lr, jnp.float32)
        updates, opt = make_optimizer(config, base).update(g, opt, p)
        new_params.append(optax.apply_updates(p, updates))
        new_opts.append(opt)
    average = optax.incremental_update(new_params[0], state.average_policy_params, config.average_rate)
    return LearnerState(new_params[0], average, new_params[1], new_params[2], *new_opts), metrics
