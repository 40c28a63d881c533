"""The IMPALA+SR learner (Raposo et al. 2021 on Espeholt et al. 2018): V-trace on the augmented reward plus the SR loss.

``update`` re-runs the network on the T + 1 observations of a time-major batch, continues every stream's
episodic memory from the state the actor recorded at the unroll's start, computes the memory term
sum_{k<t} c(s_k) step by step (``memory_sums``), the SR loss (eq. 1 or 3), the augmented reward
alpha c(s_t) + beta r_t (eq. 2) and IMPALA's V-trace policy-gradient, baseline and entropy losses on it,
and takes one RMSProp step on the sum. The baseline agent (``sr.enabled`` False) runs the same code path
with alpha 0, beta 1 and no SR loss (notes ambiguity 2).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlrepro.agents.impala.learner import corrected_targets, make_lr_schedule
from rlrepro.agents.impala_sr.config import ImpalaSRConfig
from rlrepro.agents.impala_sr.networks import (
    SRActorCritic,
    current_representation,
    init_sr_params,
    make_sr_network,
)
from rlrepro.losses import entropy, log_prob, policy_gradient_loss
from rlrepro.losses.synthetic_returns import EpisodicMemory, augmented_reward, memory_sums, synthetic_return_loss
from rlrepro.training.optim import clipped, learning_or_frozen, rmsprop

Params = Any


class SRBatch(NamedTuple):
    """A time-major batch of B unrolls of length T with the agent state at their start.

    Attributes:
      observations: [T + 1, B, *obs]; the last is only used for the bootstrap value.
      actions: [T, B] int32, a_t taken at observations[t].
      rewards: [T, B] float32 raw r_t of the transition t -> t + 1 (the reward after acting in s_t: the SR
        target at step t).
      dones: [T, B] bool, the transition t -> t + 1 ends an episode (observations[t + 1] starts the next).
      env_discounts: [T, B] float32, the environment's per-step discount (Chain: 0 on the transition into
        the outcome state; 1 elsewhere); V-trace uses gamma * env_discount * (1 - done).
      behaviour_logits: [T, B, A], mu(.|x_t).
      initial_core_state: the core state before observations[0]: () or (c, h) of [B, lstm_size].
      initial_memory: the episodic memory before observations[0] (values [B, C, d], counter [B]).
    """

    observations: jax.Array
    actions: jax.Array
    rewards: jax.Array
    dones: jax.Array
    env_discounts: jax.Array
    behaviour_logits: jax.Array
    initial_core_state: Any
    initial_memory: EpisodicMemory


class LearnerState(NamedTuple):
    """Network parameters, optimiser state and the number of updates taken so far."""

    params: Params
    opt_state: optax.OptState
    step: jax.Array


class SRLearnerMetrics(NamedTuple):
    """Scalars of one update: IMPALA's (sums over batch and time) plus the SR module's."""

    total_loss: jax.Array
    pg_loss: jax.Array
    baseline_loss: jax.Array
    entropy_loss: jax.Array
    entropy: jax.Array
    grad_norm: jax.Array
    mean_rho: jax.Array
    learning_rate: jax.Array
    sr_loss: jax.Array  # sum over T x B of the per-step SR loss (0 for the baseline)
    synthetic_return: jax.Array  # mean c(s_t) over the batch
    synthetic_return_sd: jax.Array  # its standard deviation over the batch's states (c telling states apart)
    gate: jax.Array  # mean g(s_t)


class SRLearner(NamedTuple):
    """``init(key) -> LearnerState`` and ``update(state, batch) -> (state, metrics)`` for one config."""

    init: Callable[[jax.Array], LearnerState]
    update: Callable[[LearnerState, SRBatch], tuple[LearnerState, SRLearnerMetrics]]


def make_optimizer(config: ImpalaSRConfig) -> optax.GradientTransformation:
    """RMSProp with the spec's eps placement and initial accumulator (or Adam, Skiing), after optional global-norm
    clipping; the learning rate follows IMPALA's schedule either way."""
    impala = config.impala
    if config.adam is not None:
        adam = config.adam
        optimizer = optax.adam(make_lr_schedule(impala), b1=adam.b1, b2=adam.b2, eps=adam.eps)
    else:
        optimizer = rmsprop(make_lr_schedule(impala), decay=impala.rmsprop_decay, epsilon=impala.rmsprop_epsilon,
                            initial_scale=config.rmsprop_initial_scale, eps_in_sqrt=config.rmsprop_eps_in_sqrt,
                            momentum=impala.rmsprop_momentum)
    return learning_or_frozen(clipped(optimizer, impala.max_grad_norm), impala.learning)


def init(config: ImpalaSRConfig, key: jax.Array, observation_shape: tuple[int, ...], num_actions: int) -> LearnerState:
    """Fresh parameters (network and SR heads), fresh optimiser state, step 0."""
    params = init_sr_params(make_sr_network(config, num_actions), key, tuple(observation_shape))
    return LearnerState(params, make_optimizer(config).init(params), jnp.zeros((), jnp.int32))


def _per_stream(fn: Callable[..., jax.Array], **kwargs: Any) -> Callable[..., jax.Array]:
    """Map a single-stream [T, ...] function over the batch axis 1 of time-major arrays."""
    return jax.vmap(functools.partial(fn, **kwargs), in_axes=1, out_axes=1)


class SRTerms(NamedTuple):
    """The SR module's per-step terms over one batch, each [T, B]."""

    loss: jax.Array  # per-step SR loss (eq. 1 or 3)
    c_t: jax.Array  # c(s_t) of the unroll's states (trained only through later memory sums)
    gate_t: jax.Array
    memory_sum_t: jax.Array


def sr_terms(
    network: SRActorCritic, params: Params, outputs: Any, batch: SRBatch, config: ImpalaSRConfig
) -> SRTerms:
    """Memory sums, gate, bias and per-step SR loss for the T steps of ``batch`` (notes §1.3).

    The memory from before the unroll holds stop-gradiented representations; its contributions are
    re-evaluated with the current c. The unroll's own states enter the memory stop-gradiented too, so the
    encoder is trained by the SR loss only through g(s_t) and b(s_t).
    """
    past = jax.lax.stop_gradient(outputs.torso[:-1])  # [T, B, d]
    c_t = network.apply(params, past, method=SRActorCritic.contribution)  # [T, B]
    c_memory = network.apply(
        params, jax.lax.stop_gradient(batch.initial_memory.values), method=SRActorCritic.contribution
    )  # [B, C]
    # Step t starts an episode when the transition t - 1 ended one; step 0's memory was reset by the actor.
    resets = jnp.concatenate([jnp.zeros_like(batch.dones[:1]), batch.dones[:-1]]).astype(bool)
    sums, _ = jax.vmap(memory_sums, in_axes=(0, 0, 1, 1), out_axes=(1, 0))(
        c_memory, batch.initial_memory.counter, c_t, resets
    )
    current = current_representation(outputs, config.sr.current_repr)[:-1]
    gate_t = network.apply(params, current, method=SRActorCritic.gate)
    bias_t = network.apply(params, current, method=SRActorCritic.bias)
    loss = _per_stream(synthetic_return_loss, two_stage=config.sr.two_stage)(batch.rewards, gate_t, sums, bias_t)
    return SRTerms(loss=loss, c_t=c_t, gate_t=gate_t, memory_sum_t=sums)


def loss_fn(
    params: Params, batch: SRBatch, config: ImpalaSRConfig, network: SRActorCritic
) -> tuple[jax.Array, SRLearnerMetrics]:
    """IMPALA's actor-critic loss on the augmented reward (eq. 2) plus ``loss_weight`` x the summed SR loss."""
    impala = config.impala
    resets = jnp.concatenate([jnp.zeros_like(batch.dones[:1]), batch.dones]).astype(bool)
    outputs = network.apply(params, batch.observations, resets, batch.initial_core_state, method=SRActorCritic.unroll)
    logits_tm1, v_tm1, v_t = outputs.logits[:-1], outputs.values[:-1], outputs.values[1:]
    rewards = batch.rewards.astype(jnp.float32)
    clipped = rewards if impala.reward_clip is None else jnp.clip(rewards, -impala.reward_clip, impala.reward_clip)
    if config.sr.enabled:
        terms = sr_terms(network, params, outputs, batch, config)
        rl_rewards = augmented_reward(terms.c_t, clipped, alpha=config.sr.alpha, beta=config.sr.beta)
        sr_loss = jnp.sum(terms.loss)
        c_mean, c_sd, gate_mean = jnp.mean(terms.c_t), jnp.std(terms.c_t), jnp.mean(terms.gate_t)
    else:  # the baseline: alpha = 0, beta = 1, no SR loss
        rl_rewards, sr_loss = clipped, jnp.zeros((), jnp.float32)
        c_mean = c_sd = gate_mean = jnp.zeros((), jnp.float32)
    discount_t = impala.discount * batch.env_discounts * (1.0 - batch.dones.astype(jnp.float32))

    stream_log_prob = _per_stream(log_prob)
    log_rho = stream_log_prob(logits_tm1, batch.actions) - stream_log_prob(batch.behaviour_logits, batch.actions)
    rho_tm1 = jax.lax.stop_gradient(jnp.exp(log_rho))
    errors, pg_advantage = corrected_targets(impala, v_tm1, v_t, rl_rewards, discount_t, rho_tm1)
    epsilon = impala.epsilon_correction if impala.correction == "epsilon" else 0.0
    pg_loss = jnp.sum(_per_stream(policy_gradient_loss, log_prob_epsilon=epsilon)(logits_tm1, batch.actions, pg_advantage))
    baseline_loss = impala.baseline_cost * 0.5 * jnp.sum(jnp.square(errors))
    entropies = _per_stream(entropy)(logits_tm1)
    entropy_loss = -impala.entropy_cost * jnp.sum(entropies)
    total_loss = pg_loss + baseline_loss + entropy_loss + config.sr.loss_weight * sr_loss
    zero = jnp.zeros((), jnp.float32)
    metrics = SRLearnerMetrics(
        total_loss=total_loss, pg_loss=pg_loss, baseline_loss=baseline_loss, entropy_loss=entropy_loss,
        entropy=jnp.mean(entropies), grad_norm=zero, mean_rho=jnp.mean(rho_tm1), learning_rate=zero,
        sr_loss=sr_loss, synthetic_return=c_mean, synthetic_return_sd=c_sd, gate=gate_mean,
    )
    return total_loss, metrics


def update(config: ImpalaSRConfig, state: LearnerState, batch: SRBatch) -> tuple[LearnerState, SRLearnerMetrics]:
    """One learner step: gradient of ``loss_fn``, optional clipping, RMSProp (or Adam) with the lr schedule."""
    network = make_sr_network(config, batch.behaviour_logits.shape[-1])
    grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params, batch, config, network)
    updates, opt_state = make_optimizer(config).update(grads, state.opt_state, state.params)
    metrics = metrics._replace(
        grad_norm=optax.tree.norm(grads),
        learning_rate=jnp.asarray(make_lr_schedule(config.impala)(state.step), jnp.float32),
    )
    return LearnerState(optax.apply_updates(state.params, updates), opt_state, state.step + 1), metrics


def make_learner(config: ImpalaSRConfig, observation_shape: tuple[int, ...], num_actions: int) -> SRLearner:
    """``init`` and ``update`` with the config and shapes closed over (pure; jit and vmap them)."""
    return SRLearner(
        init=functools.partial(init, config, observation_shape=tuple(observation_shape), num_actions=num_actions),
        update=functools.partial(update, config),
    )
