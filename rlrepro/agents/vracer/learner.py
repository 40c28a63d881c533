"""V-RACER learner (Alg. 3): ``init`` and ``update`` pure functions, jit-able and vmappable over seeds.

The loss of one minibatch (eqs. 5, 9, 10-11 in loss form, notes §1.2):
    L = mean_i [ w_i (L^tbc_i + L^off-PG_i) + k_i D_KL(mu_i || pi(.|s_i)) ]
with (w_i, k_i) from ``rule_weights``: ReF-ER (beta near_i, 1 - beta), ReF-ER-1 (near_i, 0), ReF-ER-2
(beta, 1 - beta), ER (1, 0). Near/far is judged with the current rho against c_max(t); the learning rate is eta(t)
(eq. 13), passed in per update.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlrepro.agents.vracer.config import VRacerConfig
from rlrepro.agents.vracer.networks import VRacerNetwork
from rlrepro.losses.refer import near_policy, rule_weights, vracer_terms
from rlrepro.training.optim import learning_or_frozen


class LearnerState(NamedTuple):
    params: Any
    opt_state: Any


class Batch(NamedTuple):
    """B stored time steps: standardised s, the action taken (network units), mu = (mean, std), Q^ret."""

    obs: jax.Array
    action: jax.Array
    mu_mean: jax.Array
    mu_std: jax.Array
    q_ret: jax.Array


class UpdateOutput(NamedTuple):
    """Per sample: the current V and log rho (written back to the memory); per update: metrics."""

    v: jax.Array
    log_rho: jax.Array
    loss: jax.Array
    kl: jax.Array
    near: jax.Array


def make_network(config: VRacerConfig, action_dim: int) -> VRacerNetwork:
    return VRacerNetwork(config.hidden_sizes, action_dim, config.init_std)


def make_optimizer(config: VRacerConfig) -> optax.GradientTransformation:
    optimizer = optax.inject_hyperparams(optax.adam)(learning_rate=config.learning_rate, eps=config.adam_eps)
    return learning_or_frozen(optimizer, config.learning)


def init(config: VRacerConfig, key: jax.Array, obs_dim: int, action_dim: int) -> LearnerState:
    params = make_network(config, action_dim).init(key, jnp.zeros((obs_dim,), jnp.float32))
    return LearnerState(params, make_optimizer(config).init(params))


def loss_fn(params: Any, config: VRacerConfig, action_dim: int, batch: Batch, beta: jax.Array, c_max: jax.Array):
    """The minibatch loss and the per-sample outputs (see the module docstring)."""
    v, mean, std = make_network(config, action_dim).apply(params, batch.obs)
    rules = config.rules
    terms = jax.vmap(
        lambda v_, m_, a_, mm_, ms_, q_: vracer_terms(
            v_, m_, std, a_, mm_, ms_, q_, rho_cap=rules.rho_cap, kl_direction=rules.kl_direction
        )
    )(v, mean, batch.action, batch.mu_mean, batch.mu_std, batch.q_ret)
    near = near_policy(terms.log_rho, c_max)
    w, k = rule_weights(rules.variant, near, beta)
    loss = jnp.mean(w * (terms.value_loss + terms.policy_loss) + k * terms.kl)
    return loss, UpdateOutput(terms.v, terms.log_rho, loss, jnp.mean(terms.kl), jnp.mean(near))


def update(
    config: VRacerConfig, action_dim: int, state: LearnerState, batch: Batch, beta: jax.Array, c_max: jax.Array,
    learning_rate: jax.Array,
) -> tuple[LearnerState, UpdateOutput]:
    """One Adam step at eta(t) on the ReF-ER loss."""
    grads, out = jax.grad(loss_fn, has_aux=True)(state.params, config, action_dim, batch, beta, c_max)
    opt_state = state.opt_state
    opt_state.hyperparams["learning_rate"] = jnp.asarray(learning_rate, jnp.float32)
    updates, opt_state = make_optimizer(config).update(grads, opt_state, state.params)
    return LearnerState(optax.apply_updates(state.params, updates), opt_state), out
