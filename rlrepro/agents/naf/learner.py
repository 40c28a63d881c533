"""NAF + ReF-ER learner: ``init`` and ``update`` pure functions, jit-able and vmappable over seeds.

    L = mean_i u_i [ w_i 1/2 (Q(s_i, a_i) - y_i)^2 + k_i ||m(s_i) - m_mu,i||^2 / (2 sigma^2) ],  y = r + gamma' V'(s')
with Q of eq. 4 and (w_i, k_i) from ``rule_weights``: rule 2's beta scales the whole TD gradient, as eq. 10 writes
it (``rule2_gradient`` whole, the default). With ``mean_only`` (smarties@2019 NAF.cpp) the TD term is
c_i 1/2 (Q_b(s_i, a_i) - y_i)^2, Q_b being eq. 4 with the mean outputs entering as stop_grad(m) + beta (m -
stop_grad(m)): the same value, with the TD gradient on m scaled by beta and that on V and L unscaled; c_i = near_i
under rule 1 (far samples: no TD gradient), 1 otherwise. k_i = 1 - beta under rule 2. u_i: the importance weight of
prioritised replay (Schaul et al. 2016, §3.4; 1 with uniform sampling); |Q - y| is the sample's new priority.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlrepro.agents.naf.config import NAFConfig
from rlrepro.agents.naf.networks import NAFNetwork, naf_q
from rlrepro.losses.refer import TransitionBatch as Batch
from rlrepro.losses.refer import behaviour_kl, log_importance_ratio, near_policy, rule_weights, uses_rule1, uses_rule2, weighted_mean
from rlrepro.training.optim import learning_or_frozen


class LearnerState(NamedTuple):
    params: Any
    target: Any
    opt_state: Any


class UpdateOutput(NamedTuple):
    log_rho: jax.Array
    critic_loss: jax.Array
    kl: jax.Array
    near: jax.Array
    td_error: jax.Array  # per sample |Q_NAF(s, a) - y| before the update (PER's priority)


def _optimizer(config: NAFConfig) -> optax.GradientTransformation:
    optimizer = optax.inject_hyperparams(optax.adam)(learning_rate=config.learning_rate, eps=config.adam_eps)
    return learning_or_frozen(optimizer, config.learning)


def init(config: NAFConfig, key: jax.Array, obs_dim: int, action_dim: int) -> LearnerState:
    params = NAFNetwork(config.hidden_sizes, action_dim).init(key, jnp.zeros((obs_dim,)))
    return LearnerState(params, params, _optimizer(config).init(params))


def sample_losses(config: NAFConfig, v, m, l, y, batch: Batch, near, beta) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Per-sample loss (the TD term weighted as ``rule2_gradient`` says, plus rule 2's KL), TD error Q - y and KL.

    ``v`` [B], ``m`` [B, A], ``l`` [B, A, A]: the network's outputs; ``y`` [B] the (constant) Q-learning targets.
    """
    std = jnp.full_like(m, config.sigma)
    w, k = rule_weights(config.rules.variant, near, beta)
    kl = jax.vmap(lambda mm, mw, s: behaviour_kl(mm, s, mw, s, config.rules.kl_direction))(batch.mu_mean, m, std)
    if config.rule2_gradient == "whole":  # eq. 10: g = beta near g_hat - (1 - beta) g_D
        delta = naf_q(v, m, l, batch.action) - y
        return w * 0.5 * delta**2 + k * kl, delta, kl
    c = near if uses_rule1(config.rules.variant) else jnp.ones_like(near)
    b = jax.lax.stop_gradient(beta) if uses_rule2(config.rules.variant) else 1.0
    m_b = jax.lax.stop_gradient(m) + b * (m - jax.lax.stop_gradient(m))
    delta = naf_q(v, m_b, l, batch.action) - y
    return c * 0.5 * delta**2 + k * kl, delta, kl


def loss_fn(params: Any, target: Any, config: NAFConfig, action_dim: int, batch: Batch, beta, c_max):
    net = NAFNetwork(config.hidden_sizes, action_dim)
    v, m, l = net.apply(params, batch.obs)
    next_v, _, _ = net.apply(target, batch.next_obs)
    y = jax.lax.stop_gradient(batch.reward + batch.discount * next_v)
    std = jnp.full_like(m, config.sigma)
    log_rho = jax.vmap(log_importance_ratio)(batch.action, m, std, batch.mu_mean, std)
    near = near_policy(log_rho, c_max)
    per_sample, delta, kl = sample_losses(config, v, m, l, y, batch, near, beta)
    loss = weighted_mean(config, batch, per_sample)
    td = 0.5 * delta**2
    return loss, UpdateOutput(log_rho, jnp.mean(td), jnp.mean(kl), jnp.mean(near), jax.lax.stop_gradient(jnp.abs(delta)))


def update(config: NAFConfig, action_dim: int, state: LearnerState, batch: Batch, beta, c_max, lr_scale):
    """One Adam step (learning rate times ``lr_scale``) and the soft target update."""
    grads, out = jax.grad(loss_fn, has_aux=True)(state.params, state.target, config, action_dim, batch, beta, c_max)
    opt_state = state.opt_state
    opt_state.hyperparams["learning_rate"] = config.learning_rate * lr_scale
    updates, opt_state = _optimizer(config).update(grads, opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    return LearnerState(params, optax.incremental_update(params, state.target, config.target_rate), opt_state), out
