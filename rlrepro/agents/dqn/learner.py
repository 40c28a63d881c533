"""The DQN learner as a pair of pure functions ``init`` and ``update`` (Adam, target network, pluggable loss).

The loss is either one of the hand-written DQN-family losses (``rlrepro.losses.dqn``, vmapped over the
batch and averaged, as the released code's ``reduce_mean``) or a loss program run by the search
interpreter (``rlrepro.search.interpreter``); the program's arrays are an argument of ``update``, so one
compiled update serves every program.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlrepro.agents.dqn.config import DQNConfig
from rlrepro.agents.dqn.networks import make_q_network
from rlrepro.losses import ddqn_loss, dqn_loss, dqnclipped_case, dqnclipped_loss, dqnreg_loss
from rlrepro.training.optim import learning_or_frozen

Params = Any
Apply = Callable[[Params, jax.Array], jax.Array]


class Batch(NamedTuple):
    """B transitions: ``obs_tm1`` [B, *obs], ``a_tm1`` [B] int32, ``r_t`` [B], ``discount_t`` = gamma (1 - terminal_t)
    [B] and ``obs_t`` [B, *obs] (the true next observation, also at time limits)."""

    obs_tm1: jax.Array
    a_tm1: jax.Array
    r_t: jax.Array
    discount_t: jax.Array
    obs_t: jax.Array


class LearnerState(NamedTuple):
    """Online and target parameters, Adam state and the number of updates taken (int32)."""

    params: Params
    target_params: Params
    opt_state: optax.OptState
    step: jax.Array


class LearnerMetrics(NamedTuple):
    """The batch's loss and, for DQNClipped, the fraction of its transitions in each case 1..4 of Fig. 6
    (``dqnclipped_case``; NaN for the other losses)."""

    loss: jax.Array
    cases: jax.Array  # [4]


class Learner(NamedTuple):
    init: Callable[[jax.Array], LearnerState]
    update: Callable[[LearnerState, Batch, Any], tuple[LearnerState, LearnerMetrics]]
    apply: Apply


LossFn = Callable[[Params, Params, Batch, Any], jax.Array]


def make_closed_form_loss(config: DQNConfig, apply: Apply) -> LossFn:
    """Mean over the batch of the configured hand-written loss; ``program`` (the last argument) is ignored."""
    clip = None if config.clip_gamma == "per_transition" else config.discount

    def per_example(q_tm1, a, r, d, q_t, q_t_online):
        if config.loss == "dqn":
            return dqn_loss(q_tm1, a, r, d, q_t, td_scale=config.td_scale)
        if config.loss == "ddqn":
            return ddqn_loss(q_tm1, a, r, d, q_t, q_t_online, td_scale=config.td_scale)
        if config.loss == "dqnreg":
            return dqnreg_loss(q_tm1, a, r, d, q_t, k=config.k, td_scale=config.td_scale)
        return dqnclipped_loss(q_tm1, a, r, d, q_t, clip_discount=clip, td_scale=config.td_scale)

    def loss_fn(params: Params, target_params: Params, batch: Batch, program: Any = None) -> jax.Array:
        q_tm1 = apply(params, batch.obs_tm1)
        q_t = apply(target_params, batch.obs_t)
        q_t_online = apply(params, batch.obs_t) if config.loss == "ddqn" else q_t
        losses = jax.vmap(per_example)(q_tm1, batch.a_tm1, batch.r_t, batch.discount_t, q_t, q_t_online)
        return jnp.mean(losses)

    return loss_fn


def make_clipped_cases(config: DQNConfig, apply: Apply) -> Callable[[Params, Params, Batch], jax.Array]:
    """Fraction of the batch in each DQNClipped case 1..4 (Fig. 6: which argument of each max is active)."""
    clip = None if config.clip_gamma == "per_transition" else config.discount

    def cases(params: Params, target_params: Params, batch: Batch) -> jax.Array:
        case = jax.vmap(lambda *a: dqnclipped_case(*a, clip_discount=clip, td_scale=config.td_scale))(
            apply(params, batch.obs_tm1), batch.a_tm1, batch.r_t, batch.discount_t, apply(target_params, batch.obs_t)
        )
        return jnp.mean(case[:, None] == jnp.arange(1, 5)[None], axis=0)

    return cases


def make_learner(
    config: DQNConfig,
    obs_shape: tuple[int, ...],
    num_actions: int,
    loss_factory: Callable[[Apply], LossFn] | None = None,
) -> Learner:
    """``init(key)`` and ``update(state, batch, program)`` for one seed (pure; jit and vmap them outside).

    ``loss_factory(apply)`` builds the loss from the network's apply (the search interpreter); default: the
    configured hand-written loss. With ``config.conv_network`` the Q-network is the Atari conv net on uint8
    frames; ``config.reward_clip`` clips the batch's rewards before the loss.
    """
    network = make_q_network(num_actions, config.hidden_sizes, config.conv_network)
    apply: Apply = network.apply
    loss_fn = loss_factory(apply) if loss_factory else make_closed_form_loss(config, apply)
    cases_fn = make_clipped_cases(config, apply) if loss_factory is None and config.loss == "dqnclipped" else None
    optimizer = learning_or_frozen(optax.adam(config.learning_rate, eps=config.adam_eps), config.learning)

    def init(key: jax.Array) -> LearnerState:
        obs_dtype = jnp.uint8 if config.conv_network is not None else jnp.float32
        params = network.init(key, jnp.zeros((1, *obs_shape), obs_dtype))
        return LearnerState(params, params, optimizer.init(params), jnp.zeros((), jnp.int32))

    def update(state: LearnerState, batch: Batch, program: Any = None) -> tuple[LearnerState, LearnerMetrics]:
        if config.reward_clip is not None:
            batch = batch._replace(r_t=jnp.clip(batch.r_t, -config.reward_clip, config.reward_clip))
        loss, grads = jax.value_and_grad(loss_fn)(state.params, state.target_params, batch, program)
        cases = cases_fn(state.params, state.target_params, batch) if cases_fn else jnp.full(4, jnp.nan)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        step = state.step + 1
        copy = step % config.target_period == 0
        target = jax.tree.map(lambda t, p: jnp.where(copy, p, t), state.target_params, params)
        return LearnerState(params, target, opt_state, step), LearnerMetrics(loss, cases)

    return Learner(init, update, apply)
