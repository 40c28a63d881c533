"""TD(lambda) learner: one optimiser step per trajectory towards its lambda-returns (Sutton & Barto §12.1).

``loss = mean_{t,b} (sg(G^lambda_t) - v(S_t))^2`` with G^lambda bootstrapped from v(S_{t+1}) and the last
observation; the same mean-squared form as FRODO's inner prediction loss (eq. 8), with the lambda-return
as the fixed target. Pure ``init`` / ``update``; vmap over seeds.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlrepro.losses import lambda_returns
from rlrepro.agents.td_lambda.config import TdLambdaConfig
from rlrepro.networks.value import fold_time
from rlrepro.training.unroll import Trajectory


class TdLambdaState(NamedTuple):
    """Value parameters and optimiser state."""

    params: Any
    opt_state: optax.OptState


def init(config: TdLambdaConfig, key: jax.Array, observation_shape: tuple[int, ...]) -> TdLambdaState:
    """Fresh value parameters (a zero table for ``tabular``) and optimiser state."""
    params = config.make_network().init(key, jnp.zeros((1, *observation_shape), jnp.float32))
    return TdLambdaState(params, config.optimizer.make().init(params))


def loss_fn(params: Any, traj: Trajectory, config: TdLambdaConfig) -> jax.Array:
    """Mean squared error to the stop-gradiented lambda-returns of each stream."""
    values = fold_time(functools.partial(config.make_network().apply, params), traj.observations)
    stream = jax.vmap(functools.partial(lambda_returns, lambda_=config.trace_lambda), in_axes=1, out_axes=1)
    targets = jax.lax.stop_gradient(stream(traj.rewards, traj.discounts, values[1:]))
    return jnp.mean(jnp.square(targets - values[:-1]))


def update(config: TdLambdaConfig, state: TdLambdaState, traj: Trajectory) -> tuple[TdLambdaState, jax.Array]:
    """One optimiser step on ``loss_fn``; returns the new state and the loss."""
    loss, grads = jax.value_and_grad(loss_fn)(state.params, traj, config)
    updates, opt_state = config.optimizer.make().update(grads, state.opt_state, state.params)
    return TdLambdaState(optax.apply_updates(state.params, updates), opt_state), loss
