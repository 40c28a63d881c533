"""PPO learner (Schulman et al. 2017, Alg. 1): ``init`` and ``update`` pure functions, jit-able and vmappable over seeds.

One ``update`` consumes one rollout of T steps: GAE(lambda) advantages and lambda-returns (eqs. 11-12) from the
values the actor recorded, the advantages standardised over the rollout, then ``epochs`` passes over the rollout in
shuffled minibatches of M steps, each one Adam step of the policy on the clipped surrogate (eq. 7) and one of the
value network on the squared error to the lambda-return (eq. 9), with their own learning rates (ReF-ER App. A).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlrepro.agents.ppo.config import PPOConfig
from rlrepro.agents.ppo.networks import PolicyNetwork, ValueNetwork
from rlrepro.losses.ppo import clipped_surrogate_loss, generalized_advantage_estimation, value_loss
from rlrepro.losses.refer import gaussian_kl, gaussian_log_prob
from rlrepro.training.optim import learning_or_frozen


class LearnerState(NamedTuple):
    policy_params: Any
    value_params: Any
    policy_opt: Any
    value_opt: Any


class Trajectory(NamedTuple):
    """One seed's rollout of T steps, transition k: s_tm1 (standardised, as acted on) -> a_tm1 -> r_t, s_t.

    ``mean``/``std``/``log_prob`` are the behaviour's (pi_old); ``v_tm1`` = V(s_tm1) when acting; ``v_t`` = V of the
    transition's own next state (the final observation at a truncation; ignored at a terminal, where
    ``discount_t`` = 0); ``continue_t`` = 0 where an episode ended.
    """

    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    mean: jax.Array
    std: jax.Array
    v_tm1: jax.Array
    r_t: jax.Array
    discount_t: jax.Array
    continue_t: jax.Array
    v_t: jax.Array


class UpdateMetrics(NamedTuple):
    """Means over the update's minibatches, and after it: D_KL(pi_old || pi_new) over the rollout (the behaviour's
    distance from the new policy, the quantity of the paper's Fig. 5) and the policy's mean std."""

    policy_loss: jax.Array
    value_loss: jax.Array
    clip_fraction: jax.Array
    kl: jax.Array
    std: jax.Array


def make_policy(config: PPOConfig, action_dim: int) -> PolicyNetwork:
    return PolicyNetwork(config.hidden_sizes, action_dim, config.init_log_std)


def make_value(config: PPOConfig) -> ValueNetwork:
    return ValueNetwork(config.hidden_sizes)


def make_optimizer(config: PPOConfig, learning_rate: float) -> optax.GradientTransformation:
    optimizer = optax.inject_hyperparams(optax.adam)(learning_rate=learning_rate, eps=config.adam_eps)
    return learning_or_frozen(optimizer, config.learning)


def init(config: PPOConfig, key: jax.Array, obs_dim: int, action_dim: int) -> LearnerState:
    policy_key, value_key = jax.random.split(key)
    obs = jnp.zeros((obs_dim,), jnp.float32)
    policy_params = make_policy(config, action_dim).init(policy_key, obs)
    value_params = make_value(config).init(value_key, obs)
    return LearnerState(
        policy_params, value_params,
        make_optimizer(config, config.policy_learning_rate).init(policy_params),
        make_optimizer(config, config.value_learning_rate).init(value_params),
    )


def advantages_and_targets(config: PPOConfig, traj: Trajectory) -> tuple[jax.Array, jax.Array]:
    """(advantages, standardised if configured; lambda-return targets A_t + V(s_tm1)) of one rollout."""
    adv = generalized_advantage_estimation(traj.r_t, traj.discount_t, traj.continue_t, traj.v_tm1, traj.v_t, config.gae_lambda)
    target = adv + traj.v_tm1
    if config.normalize_advantages:
        adv = (adv - jnp.mean(adv)) / (jnp.std(adv) + 1e-8)
    return adv, target


def minibatch_loss(params: tuple[Any, Any], config: PPOConfig, action_dim: int, mb: tuple) -> tuple[jax.Array, tuple]:
    """Clipped-surrogate loss of the policy plus the value loss of one minibatch (separate parameters, so each
    network's gradient is its own loss's)."""
    policy_params, value_params = params
    obs, action, old_log_prob, adv, target = mb
    mean, std = make_policy(config, action_dim).apply(policy_params, obs)
    log_prob = jax.vmap(gaussian_log_prob, in_axes=(0, 0, None))(action, mean, std)
    log_ratio = log_prob - jax.lax.stop_gradient(old_log_prob)
    policy_loss = jnp.mean(clipped_surrogate_loss(log_ratio, adv, config.clip_epsilon))
    v = make_value(config).apply(value_params, obs)
    v_loss = jnp.mean(value_loss(v, target))
    clipped = jnp.mean((jnp.abs(jnp.exp(log_ratio) - 1.0) > config.clip_epsilon).astype(jnp.float32))
    return policy_loss + v_loss, (policy_loss, v_loss, clipped)


def update(
    config: PPOConfig, action_dim: int, state: LearnerState, traj: Trajectory, key: jax.Array,
    policy_learning_rate: jax.Array, value_learning_rate: jax.Array,
) -> tuple[LearnerState, UpdateMetrics]:
    """``epochs`` x ``minibatches`` Adam steps on one rollout (learning rates eta(t) of eq. 13, passed in)."""
    adv, target = advantages_and_targets(config, traj)
    steps = traj.obs.shape[0]
    order = jax.vmap(lambda k: jax.random.permutation(k, steps))(jax.random.split(key, config.epochs))
    order = order.reshape(config.epochs * config.minibatches, config.minibatch_size)
    policy_opt, value_opt = state.policy_opt, state.value_opt
    policy_opt.hyperparams["learning_rate"] = jnp.asarray(policy_learning_rate, jnp.float32)
    value_opt.hyperparams["learning_rate"] = jnp.asarray(value_learning_rate, jnp.float32)
    policy_tx = make_optimizer(config, config.policy_learning_rate)
    value_tx = make_optimizer(config, config.value_learning_rate)

    def step(learner: LearnerState, idx: jax.Array):
        mb = (traj.obs[idx], traj.action[idx], traj.log_prob[idx], adv[idx], target[idx])
        params = (learner.policy_params, learner.value_params)
        (_, aux), (policy_grads, value_grads) = jax.value_and_grad(minibatch_loss, has_aux=True)(params, config, action_dim, mb)
        policy_updates, p_opt = policy_tx.update(policy_grads, learner.policy_opt, learner.policy_params)
        value_updates, v_opt = value_tx.update(value_grads, learner.value_opt, learner.value_params)
        return LearnerState(
            optax.apply_updates(learner.policy_params, policy_updates),
            optax.apply_updates(learner.value_params, value_updates), p_opt, v_opt,
        ), aux

    state, (policy_loss, v_loss, clipped) = jax.lax.scan(step, LearnerState(state.policy_params, state.value_params, policy_opt, value_opt), order)
    mean, std = make_policy(config, action_dim).apply(state.policy_params, traj.obs)
    kl = jnp.mean(jax.vmap(gaussian_kl, in_axes=(0, 0, 0, None))(traj.mean, traj.std, mean, std))
    return state, UpdateMetrics(jnp.mean(policy_loss), jnp.mean(v_loss), jnp.mean(clipped), kl, jnp.mean(std))
