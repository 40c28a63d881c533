"""The IMPALA learner (Espeholt et al. 2018, §4.2) as a pair of pure functions ``init`` and ``update``.

``update`` re-runs the network on the T + 1 observations of a time-major batch, computes the
off-policy-corrected targets of the configured correction (§5.2.2), and takes one TF1-style RMSProp
step on the actor-critic loss summed over batch and time (Table D.1 note). Both functions are pure:
jit them with the config closed over (``make_learner``) and ``vmap`` them over seeds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.agents.impala.networks import ActorCritic, init_params, make_network
from rlrepro.losses import entropy, log_prob, policy_gradient_loss, vtrace
from rlrepro.training.optim import clipped, learning_or_frozen, learning_rate_schedule, rmsprop
from rlrepro.training.unroll import Batch, Params


class LearnerState(NamedTuple):
    """Network parameters, RMSProp state and the number of updates taken so far (int32)."""

    params: Params
    opt_state: optax.OptState
    step: jax.Array


class LearnerMetrics(NamedTuple):
    """Scalars of one update. Losses are sums over batch and time; ``entropy`` is the mean per step."""

    total_loss: jax.Array
    pg_loss: jax.Array
    baseline_loss: jax.Array
    entropy_loss: jax.Array
    entropy: jax.Array
    grad_norm: jax.Array
    mean_rho: jax.Array
    learning_rate: jax.Array


class Learner(NamedTuple):
    """``init(key) -> LearnerState`` and ``update(state, batch) -> (state, metrics)`` for one config."""

    init: Callable[[jax.Array], LearnerState]
    update: Callable[[LearnerState, Batch], tuple[LearnerState, LearnerMetrics]]


def make_lr_schedule(config: ImpalaConfig) -> optax.Schedule:
    """Learning rate per update count: linear to 0 at ``total_updates`` (Table G.1) or constant."""
    return learning_rate_schedule(config.learning_rate, config.lr_schedule, config.total_updates)


def make_optimizer(config: ImpalaConfig) -> optax.GradientTransformation:
    """RMSProp after optional clipping; TF1 semantics by default (eps inside the square root, accumulator
    initialised to 1; notes §1.5), as ``rmsprop_eps_in_sqrt`` and ``rmsprop_initial_scale`` say."""
    optimizer = rmsprop(make_lr_schedule(config), decay=config.rmsprop_decay, epsilon=config.rmsprop_epsilon,
                        initial_scale=config.rmsprop_initial_scale, eps_in_sqrt=config.rmsprop_eps_in_sqrt,
                        momentum=config.rmsprop_momentum)
    return learning_or_frozen(clipped(optimizer, config.max_grad_norm), config.learning)


def init(config: ImpalaConfig, key: jax.Array, observation_shape: tuple[int, ...], num_actions: int) -> LearnerState:
    """Fresh parameters from ``key``, fresh RMSProp state, step 0."""
    params = init_params(make_network(config, num_actions), key, tuple(observation_shape))
    return LearnerState(params=params, opt_state=make_optimizer(config).init(params), step=jnp.zeros((), jnp.int32))


def _per_stream(fn: Callable[..., jax.Array], **kwargs: Any) -> Callable[..., jax.Array]:
    """Map a single-stream [T, ...] loss over the batch axis 1 of time-major arrays."""
    return jax.vmap(functools.partial(fn, **kwargs), in_axes=1, out_axes=1)


def corrected_targets(
    config: ImpalaConfig,
    v_tm1: jax.Array,
    v_t: jax.Array,
    r_t: jax.Array,
    discount_t: jax.Array,
    rho_tm1: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Value errors ``v_s - V(x_s)`` and pg advantages of the configured correction (§5.2.2, notes §2.5).

    "vtrace" uses the importance ratios in both. The other three run V-trace with all rho = c = 1,
    i.e. the uncorrected n-step return and advantage ``r_s + gamma v_{s+1} - V(x_s)``; "one_step_is"
    then multiplies the advantage by ``min(pg_rho_bar, rho_s)``. All inputs are [T, B].
    """
    on_policy = config.correction != "vtrace"
    stream_vtrace = _per_stream(
        vtrace,
        lambda_=config.lambda_,
        clip_rho_threshold=config.rho_bar,
        clip_pg_rho_threshold=config.pg_rho_bar,
        clip_c_threshold=config.c_bar,
    )
    target_rho = jnp.ones_like(rho_tm1) if on_policy else rho_tm1
    out = stream_vtrace(v_tm1, v_t, r_t, discount_t, target_rho)
    pg_advantage = out.pg_advantage
    if config.correction == "one_step_is":
        pg_advantage = pg_advantage * jnp.minimum(config.pg_rho_bar, rho_tm1)
    return out.errors, pg_advantage


def transform_rewards(config: ImpalaConfig, r_t: jax.Array) -> jax.Array:
    """The learner's reward transform before V-trace (notes §4 item 2).

    clip: ``clip(r, -c, c)`` (Table G.1, c = ``reward_clip``; None: raw). soft_asymmetric_code (released
    code, DMLab-30): ``5 tanh(r / 5)``, times 0.3 where r < 0. soft_asymmetric_paper (Fig. D.1):
    ``0.3 min(tanh r, 0) + 5 max(tanh r, 0)``.
    """
    if config.reward_transform == "soft_asymmetric_code":
        squeezed = jnp.tanh(r_t / 5.0)
        return jnp.where(r_t < 0, 0.3 * squeezed, squeezed) * 5.0
    if config.reward_transform == "soft_asymmetric_paper":
        squashed = jnp.tanh(r_t)
        return 0.3 * jnp.minimum(squashed, 0.0) + 5.0 * jnp.maximum(squashed, 0.0)
    if config.reward_clip is None:
        return r_t
    return jnp.clip(r_t, -config.reward_clip, config.reward_clip)


def apply_to_batch(network: ActorCritic, params: Params, batch: Batch) -> tuple[jax.Array, jax.Array]:
    """Re-run ``network`` on the T + 1 observations of ``batch`` (notes §1.4).

    Feed-forward networks fold time into batch; a recurrent one is unrolled from
    ``batch.initial_core_state``, resetting its state after every ``done``. Step t is fed the action
    and raw reward that led to observations[t] (``prev_*`` for t = 0, ``actions``/``rewards`` after).

    Returns:
      ``(logits [T + 1, B, A], values [T + 1, B])``.
    """
    batch_size = batch.actions.shape[1]
    if network.lstm_size is not None and not jax.tree.leaves(batch.initial_core_state):
        raise ValueError("the network has an LSTM core: set Batch.initial_core_state (the actor's (c, h))")
    prev_action = jnp.zeros((batch_size,), jnp.int32) if batch.prev_action is None else batch.prev_action
    prev_reward = jnp.zeros((batch_size,), jnp.float32) if batch.prev_reward is None else batch.prev_reward
    last_actions = jnp.concatenate([prev_action[None].astype(jnp.int32), batch.actions.astype(jnp.int32)])
    last_rewards = jnp.concatenate([prev_reward[None].astype(jnp.float32), batch.rewards.astype(jnp.float32)])
    resets = jnp.concatenate([jnp.zeros((1, batch_size), bool), batch.dones.astype(bool)])
    logits, values, _ = network.apply(
        params, batch.observations, last_actions, last_rewards, resets, batch.initial_core_state,
        method=ActorCritic.unroll,
    )
    return logits, values


def loss_fn(
    params: Params, batch: Batch, config: ImpalaConfig, network: ActorCritic, entropy_cost: jax.Array | None = None
) -> tuple[jax.Array, LearnerMetrics]:
    """IMPALA actor-critic loss, summed over batch and time (§4.2; released-code scaling, notes §1.3).

    ``sum -log pi(a|x) pg_adv + baseline_cost * 0.5 * sum (v_s - V(x_s))^2 - entropy_cost * sum H(pi)``.
    Steps with ``batch.mask`` 0 add nothing. ``entropy_cost`` (an array, e.g. one PBT member's) replaces
    ``config.entropy_cost`` when given. The returned metrics leave ``grad_norm`` and ``learning_rate`` at 0
    for ``update`` to fill in.
    """
    logits, values = apply_to_batch(network, params, batch)
    logits_tm1, v_tm1, v_t = logits[:-1], values[:-1], values[1:]
    rewards = transform_rewards(config, batch.rewards.astype(jnp.float32))
    discount_t = config.discount * (1.0 - batch.dones.astype(jnp.float32))

    stream_log_prob = _per_stream(log_prob)
    log_rho = stream_log_prob(logits_tm1, batch.actions) - stream_log_prob(batch.behaviour_logits, batch.actions)
    rho_tm1 = jax.lax.stop_gradient(jnp.exp(log_rho))
    errors, pg_advantage = corrected_targets(config, v_tm1, v_t, rewards, discount_t, rho_tm1)

    epsilon = config.epsilon_correction if config.correction == "epsilon" else 0.0
    stream_pg_loss = _per_stream(policy_gradient_loss, log_prob_epsilon=epsilon)
    mask = jnp.ones_like(rewards) if batch.mask is None else batch.mask.astype(jnp.float32)
    pg_loss = jnp.sum(mask * stream_pg_loss(logits_tm1, batch.actions, pg_advantage))
    baseline_loss = config.baseline_cost * 0.5 * jnp.sum(mask * jnp.square(errors))
    entropies = _per_stream(entropy)(logits_tm1)
    cost = config.entropy_cost if entropy_cost is None else entropy_cost
    entropy_loss = -cost * jnp.sum(mask * entropies)
    total_loss = pg_loss + baseline_loss + entropy_loss
    count = jnp.maximum(jnp.sum(mask), 1.0)
    zero = jnp.zeros((), jnp.float32)
    metrics = LearnerMetrics(
        total_loss=total_loss,
        pg_loss=pg_loss,
        baseline_loss=baseline_loss,
        entropy_loss=entropy_loss,
        entropy=jnp.sum(mask * entropies) / count,
        grad_norm=zero,
        mean_rho=jnp.sum(mask * rho_tm1) / count,
        learning_rate=zero,
    )
    return total_loss, metrics


def gradients(params: Params, batch: Batch, config: ImpalaConfig) -> tuple[Params, LearnerMetrics]:
    """Gradient of ``loss_fn`` at ``params`` on ``batch`` (an A3C worker's step: its own snapshot, its own data)."""
    network = make_network(config, batch.behaviour_logits.shape[-1])
    return jax.grad(loss_fn, has_aux=True)(params, batch, config, network)


def apply_gradients(
    state: LearnerState, grads: Params, metrics: LearnerMetrics, config: ImpalaConfig
) -> tuple[LearnerState, LearnerMetrics]:
    """Optional global-norm clip and one TF1 RMSProp step of ``grads`` on ``state`` with the lr schedule."""
    updates, opt_state = make_optimizer(config).update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    metrics = metrics._replace(
        grad_norm=optax.tree.norm(grads),
        learning_rate=jnp.asarray(make_lr_schedule(config)(state.step), jnp.float32),
    )
    return LearnerState(params=params, opt_state=opt_state, step=state.step + 1), metrics


def update(config: ImpalaConfig, state: LearnerState, batch: Batch) -> tuple[LearnerState, LearnerMetrics]:
    """One learner step: gradient of ``loss_fn``, optional global-norm clip, TF1 RMSProp with the lr schedule."""
    grads, metrics = gradients(state.params, batch, config)
    return apply_gradients(state, grads, metrics, config)


def make_learner(config: ImpalaConfig, observation_shape: tuple[int, ...], num_actions: int) -> Learner:
    """``init`` and ``update`` with the config and shapes closed over (pure; jit and vmap them freely)."""
    return Learner(
        init=functools.partial(init, config, observation_shape=tuple(observation_shape), num_actions=num_actions),
        update=functools.partial(update, config),
    )
