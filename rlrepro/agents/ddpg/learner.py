"""DDPG + ReF-ER learner (Alg. 4): ``init`` and ``update`` pure functions, jit-able and vmappable over seeds.

For each sampled step, rho = pi_w(a|s) / mu(a|s) with pi_w = N(m_w(s), sigma^2 I) and mu = N(m_mu, sigma^2 I).
    critic:  L_Q  = mean_i [ u_i c_i 1/2 (Q(s_i, a_i) - y_i)^2 ],  y = r + gamma' Q'(s', m'(s'))   (eq. 2; targets ')
    policy:  L_pi = mean_i [ u_i (w_i (-Q(s_i, m_w(s_i))) + k_i D_KL(mu_i || pi_w(.|s_i))) ]        (eq. 3, eqs. 10-11)
with (w_i, k_i) from ``rule_weights`` and c_i = near_i under rule 1, 1 otherwise: the critic is masked on far
samples but never beta-scaled (Alg. 4; smarties@2019 DPG.cpp). u_i is the importance weight of prioritised replay
(Schaul et al. 2016, §3.4; 1 with uniform sampling). It weights both losses: both are expectations over the
memory's states s_k ~ B(s) (eqs. 2-3), which PER samples with other probabilities (smarties weights the gradient of
every network by it); the critic's |Q - y| is returned as the sample's new priority.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlrepro.agents.ddpg.config import DDPGConfig
from rlrepro.agents.ddpg.networks import CriticNetwork, PolicyNetwork
from rlrepro.losses.refer import TransitionBatch as Batch
from rlrepro.losses.refer import behaviour_kl, log_importance_ratio, near_policy, rule_weights, uses_rule1, weighted_mean
from rlrepro.training.optim import learning_or_frozen


class LearnerState(NamedTuple):
    policy: Any
    critic: Any
    target_policy: Any
    target_critic: Any
    policy_opt: Any
    critic_opt: Any


class UpdateOutput(NamedTuple):
    log_rho: jax.Array
    critic_loss: jax.Array
    kl: jax.Array
    near: jax.Array
    td_error: jax.Array  # per sample |Q(s, a) - y| before the update (PER's priority)


def _nets(config: DDPGConfig, action_dim: int) -> tuple[PolicyNetwork, CriticNetwork]:
    return PolicyNetwork(config.hidden_sizes, action_dim), CriticNetwork(config.hidden_sizes)


def _optimizers(config: DDPGConfig) -> tuple[optax.GradientTransformation, optax.GradientTransformation]:
    policy = optax.inject_hyperparams(optax.adam)(learning_rate=config.policy_learning_rate, eps=config.adam_eps)
    critic = optax.inject_hyperparams(
        lambda learning_rate: optax.chain(optax.add_decayed_weights(config.critic_weight_decay), optax.adam(learning_rate, eps=config.adam_eps))
    )(learning_rate=config.critic_learning_rate)
    return learning_or_frozen(policy, config.learning), learning_or_frozen(critic, config.learning)


def init(config: DDPGConfig, key: jax.Array, obs_dim: int, action_dim: int) -> LearnerState:
    policy_net, critic_net = _nets(config, action_dim)
    k1, k2 = jax.random.split(key)
    policy = policy_net.init(k1, jnp.zeros((obs_dim,)))
    critic = critic_net.init(k2, jnp.zeros((obs_dim,)), jnp.zeros((action_dim,)))
    policy_opt, critic_opt = _optimizers(config)
    return LearnerState(policy, critic, policy, critic, policy_opt.init(policy), critic_opt.init(critic))


def _pi_terms(config: DDPGConfig, mean: jax.Array, batch: Batch, c_max: jax.Array):
    std = jnp.full_like(mean, config.sigma)
    log_rho = jax.vmap(log_importance_ratio)(batch.action, mean, std, batch.mu_mean, std)
    kl = jax.vmap(lambda mm, m, s: behaviour_kl(mm, s, m, s, config.rules.kl_direction))(batch.mu_mean, mean, std)
    return log_rho, near_policy(log_rho, c_max), kl


def critic_loss(critic: Any, state: LearnerState, config: DDPGConfig, action_dim: int, batch: Batch, near: jax.Array):
    """(L_Q, per-sample |TD error|)."""
    policy_net, critic_net = _nets(config, action_dim)
    next_q = critic_net.apply(state.target_critic, batch.next_obs, policy_net.apply(state.target_policy, batch.next_obs))
    y = jax.lax.stop_gradient(batch.reward + batch.discount * next_q)
    mask = near if uses_rule1(config.rules.variant) else jnp.ones_like(near)
    td = critic_net.apply(critic, batch.obs, batch.action) - y
    return weighted_mean(config, batch, mask * 0.5 * td**2), jax.lax.stop_gradient(jnp.abs(td))


def policy_loss(policy: Any, state: LearnerState, config: DDPGConfig, action_dim: int, batch: Batch, beta, c_max):
    policy_net, critic_net = _nets(config, action_dim)
    mean = policy_net.apply(policy, batch.obs)
    log_rho, near, kl = _pi_terms(config, mean, batch, c_max)
    w, k = rule_weights(config.rules.variant, near, beta)
    loss = weighted_mean(config, batch, w * -critic_net.apply(state.critic, batch.obs, mean) + k * kl)
    return loss, (log_rho, near, kl)


def update(config: DDPGConfig, action_dim: int, state: LearnerState, batch: Batch, beta, c_max, lr_scale):
    """One step of both nets (learning rates times ``lr_scale`` = 1/(1 + A t) or 1) and the soft target update."""
    policy_grads, (log_rho, near, kl) = jax.grad(policy_loss, has_aux=True)(
        state.policy, state, config, action_dim, batch, beta, c_max
    )
    (c_loss, td_error), critic_grads = jax.value_and_grad(critic_loss, has_aux=True)(
        state.critic, state, config, action_dim, batch, near
    )
    policy_opt_t, critic_opt_t = _optimizers(config)
    p_opt, c_opt = state.policy_opt, state.critic_opt
    p_opt.hyperparams["learning_rate"] = config.policy_learning_rate * lr_scale
    c_opt.hyperparams["learning_rate"] = config.critic_learning_rate * lr_scale
    p_updates, p_opt = policy_opt_t.update(policy_grads, p_opt, state.policy)
    c_updates, c_opt = critic_opt_t.update(critic_grads, c_opt, state.critic)
    policy, critic = optax.apply_updates(state.policy, p_updates), optax.apply_updates(state.critic, c_updates)
    tau = config.target_rate
    target_policy = optax.incremental_update(policy, state.target_policy, tau)
    target_critic = optax.incremental_update(critic, state.target_critic, tau)
    new = LearnerState(policy, critic, target_policy, target_critic, p_opt, c_opt)
    return new, UpdateOutput(log_rho, c_loss, jnp.mean(kl), jnp.mean(near), td_error)
