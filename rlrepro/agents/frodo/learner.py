"""FRODO's learner (Xu et al. 2020, §3.3, eqs. 5-7, listings C.2-C.5) as pure functions.

One meta-update takes M + 1 consecutive batches: M inner updates of the agent towards the meta-network's
targets G_eta through a differentiable RMSProp, then the outer loss on the (M + 1)-th batch with the updated
agent; eta takes one RMSProp step on the gradient of (outer loss + c * consistency), back-propagated through
all M inner updates, including the optimiser state (no truncation). The inner updates are the agent's real
updates: theta after them is kept (notes §1.6).

Data collection happens inside the differentiated function (so each inner batch is collected on-policy with
theta_i), with the acting parameters behind a stop-gradient: the meta-gradient only flows through the
learning updates, never through the sampled data.

Where gradients stop (notes §1.7): with ``target_grad = "semi"`` the theta-dependent meta-network inputs and
G are computed outside the agent's inner ``grad``, so the inner update treats G as a constant (eqs. 8/10),
while the outer ``grad`` w.r.t. eta still sees G's dependence on theta_i(eta). Outer targets and the
consistency target are stop-gradiented.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from rlrepro.agents.frodo.config import FrodoConfig
from rlrepro.agents.frodo.networks import ActorCriticWithTorso, MetaNetwork, TwoConvTorso
from rlrepro.networks.torsos import MLPTorso
from rlrepro.networks.value import MLPValue, TabularValue, fold_time
from rlrepro.training.unroll import Collect, Trajectory
from rlrepro.losses import (
    consistency_errors,
    discounted_returns,
    entropy,
    fixed_target_actor_critic_terms,
    log_prob,
    target_actor_critic_terms,
    vtrace,
)

Params = Any


class FrodoState(NamedTuple):
    """Agent and meta-network parameters, both optimiser states, and the number of meta-updates (int32)."""

    params: Params
    opt_state: optax.OptState
    meta_params: Params
    meta_opt_state: optax.OptState
    step: jax.Array


class MetaMetrics(NamedTuple):
    """Scalars of one meta-update.

    ``inner_loss``, ``consistency_loss``, ``mean_target`` and ``vtrace_g_mse`` are means over the M inner
    steps; ``vtrace_g_mse`` is the mean over steps of (V-trace return - G_eta)^2 (Fig. 3d; for prediction
    the V-trace return on-policy is the trajectory's TD(1) return).
    """

    outer_loss: jax.Array
    meta_loss: jax.Array
    inner_loss: jax.Array
    consistency_loss: jax.Array
    mean_target: jax.Array
    vtrace_g_mse: jax.Array
    meta_grad_norm: jax.Array


class Networks(NamedTuple):
    """The agent network and the meta-network of one config."""

    agent: nn.Module
    meta: MetaNetwork


Probe = Callable[[Params, Any], Any]


def make_networks(config: FrodoConfig, num_actions: int, param_dtype: Any = jnp.float32) -> Networks:
    """The agent's network (value-only for prediction, actor-critic otherwise) and g_eta."""
    meta = MetaNetwork(config.meta_hidden_size, param_dtype=param_dtype, unroll=config.meta_unroll)
    if config.task == "prediction":
        agent = TabularValue(param_dtype) if config.network == "tabular" else MLPValue(config.hidden_sizes)
        return Networks(agent, meta)
    if config.network == "frodo_conv":
        torso = TwoConvTorso(config.conv_channels, config.conv_kernels, config.conv_strides, config.conv_fc_size)
    else:
        torso = MLPTorso(tuple(config.hidden_sizes))
    return Networks(ActorCriticWithTorso(torso=torso, num_actions=num_actions), meta)


def meta_input_size(config: FrodoConfig, observation_shape: tuple[int, ...], torso_size: int = 0) -> int:
    """Width of g_eta's per-step input vector."""
    sizes = {"observation": math.prod(observation_shape), "torso": torso_size}
    width = sum(sizes.get(name, 1) for name in config.meta_inputs)
    return width + (2 if config.parameterises == "loss" else 0)


def init(
    config: FrodoConfig, key: jax.Array, observation_shape: tuple[int, ...], num_actions: int,
    param_dtype: Any = jnp.float32,
) -> FrodoState:
    """Fresh agent and meta-network parameters and optimiser states; step 0."""
    agent_key, meta_key = jax.random.split(key)
    nets = make_networks(config, num_actions, param_dtype)
    dummy = jnp.zeros((1, *observation_shape), param_dtype)
    params = nets.agent.init(agent_key, dummy)
    torso_size = 0
    if config.task == "actor_critic":
        torso_size = nets.agent.apply(params, dummy, method=ActorCriticWithTorso.embed)[2].shape[-1]
    width = meta_input_size(config, observation_shape, torso_size)
    meta_params = nets.meta.init(meta_key, jnp.zeros((1, 1, width), param_dtype))
    return FrodoState(
        params=params,
        opt_state=config.optimizer.make().init(params),
        meta_params=meta_params,
        meta_opt_state=config.meta_optimizer.make().init(meta_params),
        step=jnp.zeros((), jnp.int32),
    )


def _per_stream(fn: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    """Map a single-stream [T, ...] function over the batch axis 1 of time-major arrays."""
    return jax.vmap(functools.partial(fn, **kwargs), in_axes=1, out_axes=1)


def _batched_returns(r_t: jax.Array, discount_t: jax.Array, bootstrap: jax.Array) -> jax.Array:
    """``discounted_returns`` over [T, B] rewards and discounts with a [B] bootstrap."""
    return jax.vmap(discounted_returns, in_axes=(1, 1, 0), out_axes=1)(r_t, discount_t, bootstrap)


class AgentOutputs(NamedTuple):
    """The agent on T + 1 observations: values [T + 1, B]; logits [T + 1, B, A] and torso [T + 1, B, F] or None."""

    values: jax.Array
    logits: jax.Array | None
    torso: jax.Array | None


def agent_outputs(config: FrodoConfig, nets: Networks, params: Params, observations: jax.Array) -> AgentOutputs:
    """Run the agent on [T + 1, B, *obs] observations."""
    if config.task == "prediction":
        return AgentOutputs(fold_time(functools.partial(nets.agent.apply, params), observations), None, None)
    logits, values, torso = fold_time(
        functools.partial(nets.agent.apply, params, method=ActorCriticWithTorso.embed), observations
    )
    return AgentOutputs(values, logits, torso)


def meta_inputs(config: FrodoConfig, traj: Trajectory, out: AgentOutputs) -> jax.Array:
    """g_eta's per-step inputs [T, B, F], in the order of ``config.meta_inputs`` (§3.2, C.2, C.4)."""
    parts = []
    for name in config.meta_inputs:
        if name == "reward":
            parts.append(traj.rewards[..., None])
        elif name == "discount":
            parts.append(traj.discounts[..., None])
        elif name == "v_next":
            parts.append(out.values[1:, :, None])
        elif name == "observation":
            obs = traj.observations[:-1]
            parts.append(obs.reshape((*obs.shape[:2], -1)))
        elif name == "pi_a":
            parts.append(jnp.exp(_per_stream(log_prob)(out.logits[:-1], traj.actions))[..., None])
        elif name == "mu_a":
            parts.append(jnp.exp(_per_stream(log_prob)(traj.behaviour_logits, traj.actions))[..., None])
        elif name == "torso":
            parts.append(out.torso[:-1])
    dtype = out.values.dtype
    return jnp.concatenate([p.astype(dtype) for p in parts], axis=-1)


def clipped_rewards(config: FrodoConfig, traj: Trajectory) -> Trajectory:
    """The trajectory with rewards clipped to [-reward_clip, reward_clip] (if configured)."""
    if config.reward_clip is None:
        return traj
    return traj._replace(rewards=jnp.clip(traj.rewards, -config.reward_clip, config.reward_clip))


def vtrace_outputs(config: FrodoConfig, traj: Trajectory, out: AgentOutputs, temperature: float = 1.0) -> Any:
    """V-trace errors and pg advantages per stream ([T, B] each; C.5), with the policy at ``temperature``."""
    if out.logits is None:  # prediction: on-policy, rho = 1
        rho = jnp.ones_like(traj.rewards)
    else:
        log_pi = _per_stream(log_prob)(out.logits[:-1] / temperature, traj.actions)
        log_mu = _per_stream(log_prob)(traj.behaviour_logits, traj.actions)
        rho = jax.lax.stop_gradient(jnp.exp(log_pi - log_mu))
    stream = _per_stream(
        vtrace, lambda_=config.vtrace_lambda, clip_rho_threshold=config.rho_bar, clip_pg_rho_threshold=config.pg_rho_bar
    )
    return stream(out.values[:-1], out.values[1:], traj.rewards, traj.discounts, rho)


def _inner_loss(
    params: Params, eta: Params, target: jax.Array, inputs: jax.Array, traj: Trajectory, config: FrodoConfig, nets: Networks
) -> jax.Array:
    """The inner loss of theta (eq. 8 or 10) towards the target G, or the meta-network's loss (Fig. 3b ablation)."""
    out = agent_outputs(config, nets, params, traj.observations)
    if config.target_grad == "full" and config.parameterises == "target":  # the listings as printed: G carries gradient
        inputs = meta_inputs(config, traj, out)
        target = nets.meta.apply(eta, inputs)
    if config.task == "prediction":
        return jnp.mean(jnp.square(target - out.values[:-1]))  # eq. 8, C.2: mean over T and B
    if config.target == "vtrace":  # the IMPALA baseline: the outer V-trace loss is the inner loss
        return _vtrace_loss(config, traj, out, temperature=1.0)
    if config.parameterises == "loss":
        log_pi_a = _per_stream(log_prob)(out.logits[:-1], traj.actions)
        loss_inputs = jnp.concatenate([inputs, out.values[:-1, :, None], log_pi_a[..., None]], axis=-1)
        per_step = nets.meta.apply(eta, loss_inputs)
        return jnp.sum(per_step) - config.entropy_cost * jnp.sum(_per_stream(entropy)(out.logits[:-1]))
    terms = _per_stream(target_actor_critic_terms)(out.logits[:-1], traj.actions, out.values[:-1], target)
    return _actor_critic_total(config, terms)


def _actor_critic_total(config: FrodoConfig, terms: Any) -> jax.Array:
    """pg + baseline_cost * baseline - entropy_cost * entropy, summed over T and B (C.4/C.5)."""
    return jnp.sum(terms.pg) + config.baseline_cost * jnp.sum(terms.baseline) - config.entropy_cost * jnp.sum(terms.entropy)


def _vtrace_loss(config: FrodoConfig, traj: Trajectory, out: AgentOutputs, temperature: float) -> jax.Array:
    """IMPALA's V-trace actor-critic loss (eq. 11, listing C.5), summed over T and B."""
    vt = vtrace_outputs(config, traj, out, temperature)
    logits = out.logits[:-1] / temperature
    pg = -jnp.sum(jax.lax.stop_gradient(vt.pg_advantage) * _per_stream(log_prob)(logits, traj.actions))
    baseline = 0.5 * jnp.sum(jnp.square(vt.errors))
    return pg + config.baseline_cost * baseline - config.entropy_cost * jnp.sum(_per_stream(entropy)(logits))


def _vtrace_return(config: FrodoConfig, traj: Trajectory, out: AgentOutputs) -> jax.Array:
    """The V-trace return v_s of the trajectory (for the Fig. 3d analysis metric).

    Without a V-trace outer loss (the toys: on-policy, lambda = 1) it equals the trajectory's return
    bootstrapped from its last value, which is computed directly (cheaper to compile than V-trace's scan).
    """
    if config.outer == "vtrace":
        return vtrace_outputs(config, traj, out).errors + out.values[:-1]
    return _batched_returns(traj.rewards, traj.discounts, out.values[-1])


class InnerOutputs(NamedTuple):
    """What one inner step reports (scalars)."""

    loss: jax.Array
    consistency: jax.Array
    mean_target: jax.Array
    vtrace_g_mse: jax.Array


def inner_step(
    params: Params, opt_state: optax.OptState, eta: Params, traj: Trajectory, config: FrodoConfig, nets: Networks
) -> tuple[Params, optax.OptState, InnerOutputs]:
    """One inner update theta_{i+1} = theta_i + RMSProp(grad_theta L_inner(theta_i; eta, tau_i)) (eqs. 5-6).

    G and its theta-dependent inputs are computed here, outside the inner ``grad`` (semi-gradient); the
    consistency loss of this rollout (C.4, with eta and theta_i) is returned for the outer objective.
    """
    out = agent_outputs(config, nets, params, traj.observations)
    inputs = meta_inputs(config, traj, out)
    # No learned target without meta-learning (the V-trace baseline) or when g_eta outputs a loss (Fig. 3b):
    # there the consistency loss is 0 and the target statistics are NaN.
    has_target = config.meta_learning and config.parameterises == "target"
    target = nets.meta.apply(eta, inputs) if has_target else jnp.zeros_like(traj.rewards)
    loss, grads = jax.value_and_grad(_inner_loss)(params, eta, target, inputs, traj, config, nets)
    updates, opt_state = config.optimizer.make().update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    errors = _per_stream(consistency_errors, form=config.consistency_form, listing_offbyone=config.listing_offbyone)(
        traj.rewards, traj.discounts, target
    )
    vs = jax.lax.stop_gradient(_vtrace_return(config, traj, out))
    no_target = jnp.full((), jnp.nan)
    report = InnerOutputs(
        loss=loss,
        consistency=0.5 * jnp.sum(jnp.square(errors)) if has_target else jnp.zeros(()),
        mean_target=jnp.mean(jax.lax.stop_gradient(target)) if has_target else no_target,
        vtrace_g_mse=jnp.mean(jnp.square(vs - jax.lax.stop_gradient(target))) if has_target else no_target,
    )
    return params, opt_state, report


def outer_loss(params: Params, traj: Trajectory, config: FrodoConfig, nets: Networks) -> jax.Array:
    """The outer loss of the updated agent on the validation batch (eqs. 9, 11; C.2, C.5; Catch §4)."""
    out = agent_outputs(config, nets, params, traj.observations)
    if config.outer == "td1":
        returns = _batched_returns(traj.rewards, traj.discounts, out.values[-1])
        return jnp.mean(jnp.square(jax.lax.stop_gradient(returns) - out.values[:-1]))
    if config.outer == "monte_carlo":
        returns = _batched_returns(traj.rewards, traj.discounts, jnp.zeros_like(out.values[-1]))
        terms = _per_stream(fixed_target_actor_critic_terms)(out.logits[:-1], traj.actions, out.values[:-1], returns)
        return _actor_critic_total(config, terms)
    return _vtrace_loss(config, traj, out, temperature=config.temperature)


class Rollout(NamedTuple):
    """What the differentiated meta-objective returns besides its value."""

    params: Params
    opt_state: optax.OptState
    carry: Any
    outer_loss: jax.Array
    inner: InnerOutputs
    probes: Any
    stats: tuple[Any, Any]


def meta_objective(
    eta: Params,
    state: FrodoState,
    carry: Any,
    key: jax.Array,
    config: FrodoConfig,
    nets: Networks,
    collect_inner: Collect,
    collect_outer: Collect,
    probe: Probe,
) -> tuple[jax.Array, Rollout]:
    """``inner_updates_and_outer_loss`` of listing C.3: M inner steps, then outer + c * sum of consistency losses.

    Without meta-learning (the V-trace IMPALA baseline) the validation batch is one more inner step: M + 1
    updates on the M + 1 batches collected (``FrodoConfig.agent_updates_per_meta_update``).

    Each batch is collected with the current (stop-gradiented) agent parameters. Returns the objective
    and the updated agent, optimiser state and actor carry, with per-step reports ([M] or [M + 1] leaves).
    """
    params, opt_state = state.params, state.opt_state
    keys = jax.random.split(key, config.inner_steps + 1)
    reports, probes, stats = [], [], []
    for i in range(config.inner_steps):  # unrolled in Python: conv grads inside lax.scan are slow on CPU
        carry, traj, stat = collect_inner(keys[i], jax.lax.stop_gradient(params), carry)
        params, opt_state, report = inner_step(params, opt_state, eta, clipped_rewards(config, traj), config, nets)
        reports.append(report)
        probes.append(probe(jax.lax.stop_gradient(params), stat))
        stats.append(stat)
    carry, traj, outer_stats = collect_outer(keys[-1], jax.lax.stop_gradient(params), carry)
    probes.append(probe(jax.lax.stop_gradient(params), outer_stats))
    traj = clipped_rewards(config, traj)
    outer = outer_loss(params, traj, config, nets)
    if not config.meta_learning:
        # The IMPALA baseline has no eta to validate: it learns from the (M + 1)-th batch too, so it updates on
        # every batch it collects and is charged for (``outer`` is then that batch's loss before its update).
        params, opt_state, report = inner_step(params, opt_state, eta, traj, config, nets)
        reports.append(report)
    inner = jax.tree.map(lambda *xs: jnp.stack(xs), *reports)
    objective = outer + config.consistency_weight * jnp.sum(inner.consistency)
    stack = functools.partial(jax.tree.map, lambda *xs: jnp.stack(xs))
    return objective, Rollout(params, opt_state, carry, outer, inner, stack(*probes), (stack(*stats), outer_stats))


def meta_update(
    state: FrodoState,
    carry: Any,
    key: jax.Array,
    *,
    config: FrodoConfig,
    nets: Networks,
    collect_inner: Collect,
    collect_outer: Collect,
    probe: Probe,
) -> tuple[FrodoState, Any, MetaMetrics, Any, Any]:
    """One meta-iteration (notes §1.6): the agent keeps its M inner updates; eta takes one meta step.

    Returns:
      the new state, the actor carry, the metrics, the probes ([M + 1] leaves: after each inner update and
      at the validation batch) and the collection stats (inner: [M] leaves; validation batch).
    """
    objective = functools.partial(
        meta_objective, config=config, nets=nets, collect_inner=collect_inner, collect_outer=collect_outer, probe=probe
    )
    if config.meta_learning:
        (value, rollout), grads = jax.value_and_grad(objective, has_aux=True)(state.meta_params, state, carry, key)
        updates, meta_opt_state = config.meta_optimizer.make().update(grads, state.meta_opt_state, state.meta_params)
        meta_params = optax.apply_updates(state.meta_params, updates)
        grad_norm = optax.tree.norm(grads)
    else:
        value, rollout = objective(state.meta_params, state, carry, key)
        meta_params, meta_opt_state, grad_norm = state.meta_params, state.meta_opt_state, jnp.zeros(())
    metrics = MetaMetrics(
        outer_loss=rollout.outer_loss,
        meta_loss=value,
        inner_loss=jnp.mean(rollout.inner.loss),
        consistency_loss=jnp.mean(rollout.inner.consistency),
        mean_target=jnp.mean(rollout.inner.mean_target),
        vtrace_g_mse=jnp.mean(rollout.inner.vtrace_g_mse),
        meta_grad_norm=grad_norm,
    )
    new_state = FrodoState(rollout.params, rollout.opt_state, meta_params, meta_opt_state, state.step + 1)
    return new_state, rollout.carry, metrics, rollout.probes, rollout.stats
