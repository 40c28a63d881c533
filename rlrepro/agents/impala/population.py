"""A PBT member's IMPALA learner: the hyper-parameters PBT adapts live in the learner's state.

App. F / Table G.1 adapt the learning rate, the entropy cost, RMSProp's epsilon and the global gradient-norm
clip threshold. Here they are arrays in ``LearnerState.opt_state`` (``MemberOptState.hyper``), so one
``update`` function serves every member: ``jax.vmap`` over a leading member axis runs the whole population's
learners as one batched computation (one job, one accelerator), and PBT's copy of "weights and
hyper-parameters" is a gather along that axis (``rlrepro.agents.impala.pbt.copy_members``).

``update`` computes what ``rlrepro.agents.impala.learner.update`` does with the member's values in place of
the config's: the same loss (§4.2), ``optax.clip_by_global_norm``'s rule with the member's threshold, and
TF1-style RMSProp with the member's epsilon and learning rate times the run's schedule (Table G.1's linear
anneal to 0, or constant).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.agents.impala.learner import Batch, Learner, LearnerMetrics, LearnerState, loss_fn
from rlrepro.agents.impala.networks import init_params, make_network
from rlrepro.agents.impala.pbt import Step, copy_members
from rlrepro.training.optim import learning_or_frozen, rmsprop


class Hyper(NamedTuple):
    """The hyper-parameters PBT adapts (float32 scalars per member)."""

    learning_rate: jax.Array
    entropy_cost: jax.Array
    rmsprop_epsilon: jax.Array
    max_grad_norm: jax.Array


class MemberOptState(NamedTuple):
    """RMSProp's accumulators and the member's hyper-parameters."""

    rmsprop: optax.OptState
    hyper: Hyper


def hyper_from_config(config: ImpalaConfig) -> Hyper:
    """The config's values (a member before PBT sets its own); no clipping is an infinite threshold."""
    clip = float("inf") if config.max_grad_norm is None else config.max_grad_norm
    as_array = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return Hyper(
        as_array(config.learning_rate),
        as_array(config.entropy_cost),
        as_array(config.rmsprop_epsilon),
        as_array(clip),
    )


def schedule_fraction(config: ImpalaConfig, step: jax.Array) -> jax.Array:
    """The lr schedule as a multiplier of the member's learning rate: ``1 - step / total`` or 1."""
    if config.lr_schedule == "constant":
        return jnp.ones((), jnp.float32)
    return jnp.clip(1.0 - step.astype(jnp.float32) / config.total_updates, 0.0, 1.0)


def _rmsprop(config: ImpalaConfig, learning_rate: jax.Array, epsilon: jax.Array) -> optax.GradientTransformation:
    optimizer = rmsprop(learning_rate, decay=config.rmsprop_decay, epsilon=epsilon,
                        initial_scale=config.rmsprop_initial_scale, eps_in_sqrt=config.rmsprop_eps_in_sqrt,
                        momentum=config.rmsprop_momentum)
    return learning_or_frozen(optimizer, config.learning)


def init(config: ImpalaConfig, key: jax.Array, observation_shape: tuple[int, ...], num_actions: int) -> LearnerState:
    """Fresh parameters, RMSProp state (its accumulators do not depend on lr or epsilon) and the config's values."""
    params = init_params(make_network(config, num_actions), key, tuple(observation_shape))
    hyper = hyper_from_config(config)
    rms = _rmsprop(config, hyper.learning_rate, hyper.rmsprop_epsilon).init(params)
    return LearnerState(params=params, opt_state=MemberOptState(rms, hyper), step=jnp.zeros((), jnp.int32))


def update(config: ImpalaConfig, state: LearnerState, batch: Batch) -> tuple[LearnerState, LearnerMetrics]:
    """One learner step with the member's own entropy cost, clip threshold, epsilon and learning rate."""
    hyper = state.opt_state.hyper
    network = make_network(config, batch.behaviour_logits.shape[-1])
    grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params, batch, config, network, hyper.entropy_cost)
    grad_norm = optax.tree.norm(grads)
    # optax.clip_by_global_norm: unchanged below the threshold, rescaled to norm max_grad_norm above it.
    scale = jnp.where(grad_norm < hyper.max_grad_norm, 1.0, hyper.max_grad_norm / grad_norm)
    grads = jax.tree.map(lambda g: g * scale, grads)
    learning_rate = hyper.learning_rate * schedule_fraction(config, state.step)
    updates, rms = _rmsprop(config, learning_rate, hyper.rmsprop_epsilon).update(
        grads, state.opt_state.rmsprop, state.params
    )
    params = optax.apply_updates(state.params, updates)
    metrics = metrics._replace(grad_norm=grad_norm, learning_rate=jnp.asarray(learning_rate, jnp.float32))
    return LearnerState(params, MemberOptState(rms, hyper), state.step + 1), metrics


def make_member_learner(config: ImpalaConfig, observation_shape: tuple[int, ...], num_actions: int) -> Learner:
    """``init``/``update`` of one member (vmap them over the population)."""
    return Learner(
        init=functools.partial(init, config, observation_shape=tuple(observation_shape), num_actions=num_actions),
        update=functools.partial(update, config),
    )


def with_hyper(state: LearnerState, hyper: dict[str, object]) -> LearnerState:
    """The population's learner states ([M] leading axis) with new hyper-parameters (name -> [M] values)."""
    old = state.opt_state.hyper
    new = Hyper(**{name: jnp.asarray(hyper.get(name, getattr(old, name)), jnp.float32) for name in Hyper._fields})
    return state._replace(opt_state=state.opt_state._replace(hyper=new))


def hyper_dict(state: LearnerState) -> dict[str, jax.Array]:
    """The population's hyper-parameters, name -> [M]."""
    return state.opt_state.hyper._asdict()


def apply_step(state: LearnerState, step: Step) -> LearnerState:
    """A PBT step on the population's learners: each member continues from its source's weights, RMSProp
    accumulators and update count (App. F: "weights and parameters are copied"), with the step's new
    hyper-parameters."""
    return with_hyper(copy_members(state, step.source), step.hyper)
