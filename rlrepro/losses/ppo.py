"""PPO's losses (Schulman et al. 2017, "Proximal Policy Optimization Algorithms", eqs. 7, 9, 11-12).

Single-stream functions in rlax style (time-suffixed names for a transition s_tm1, a_tm1 -> r_t, discount_t,
s_t): they return per-step terms; the learner ``vmap``s, reduces and differentiates. The advantage estimate
handles the two ways an episode ends inside a rollout: a true terminal (``discount_t = 0``: nothing follows)
and a time-limit truncation (``discount_t = gamma`` with ``v_t`` the value of the last real observation, so the
estimate bootstraps from it); in both cases ``continue_t = 0`` stops the lambda-trace from reaching into the next
episode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


def generalized_advantage_estimation(
    r_t: ArrayLike, discount_t: ArrayLike, continue_t: ArrayLike, v_tm1: ArrayLike, v_t: ArrayLike, lambda_: float
) -> jax.Array:
    """GAE(lambda) of a rollout (PPO eqs. 11-12; Schulman et al. 2016, "High-dimensional continuous control using
    generalized advantage estimation", eq. 16), with episode ends.

        delta_t = r_t + discount_t v_t - v_tm1
        A_t = delta_t + discount_t lambda continue_t A_{t+1}        (A after the rollout's last step = 0)

    Args:
      r_t: [T] rewards. discount_t: [T] gamma, 0 where s_t is a true terminal.
      continue_t: [T] 1, 0 where the episode ended at s_t (terminal or truncated): the trace is cut there.
      v_tm1: [T] V(s_tm1). v_t: [T] V(s_t) of the transition's own next state: at a truncation the value of the
        final observation (not of the next episode's first one); any finite value at a terminal (it is discounted
        by 0). The last step's v_t bootstraps the rollout.
      lambda_: GAE's lambda.

    Returns:
      [T] advantages (targets, no gradient: V's targets are advantages + v_tm1).
    """
    r_t, discount_t, continue_t = (jnp.asarray(x, jnp.float32) for x in (r_t, discount_t, continue_t))
    v_tm1, v_t = jnp.asarray(v_tm1, jnp.float32), jnp.asarray(v_t, jnp.float32)
    delta = r_t + discount_t * v_t - v_tm1
    trace = discount_t * lambda_ * continue_t

    def backward(carry, x):
        delta_, trace_ = x
        advantage = delta_ + trace_ * carry
        return advantage, advantage

    _, advantages = jax.lax.scan(backward, jnp.zeros((), jnp.float32), (delta, trace), reverse=True)
    return jax.lax.stop_gradient(advantages)


def clipped_surrogate_loss(log_ratio_t: ArrayLike, adv_t: ArrayLike, epsilon: float) -> jax.Array:
    """Minus PPO's clipped surrogate objective per step (eq. 7):

        L^CLIP_t = min(r_t A_t, clip(r_t, 1 - epsilon, 1 + epsilon) A_t),   r_t = pi(a_t|s_t) / pi_old(a_t|s_t),

    returned as -L^CLIP_t (a loss to minimise). ``log_ratio_t`` carries the gradient (log pi - stop_grad(log
    pi_old)); the advantage is a constant. Where the clipped term is the smaller one, the gradient is zero.
    """
    adv_t = jax.lax.stop_gradient(jnp.asarray(adv_t, jnp.float32))
    ratio = jnp.exp(log_ratio_t)
    clipped = jnp.clip(ratio, 1.0 - epsilon, 1.0 + epsilon)
    return -jnp.minimum(ratio * adv_t, clipped * adv_t)


def value_loss(v_tm1: ArrayLike, target_t: ArrayLike) -> jax.Array:
    """PPO's value loss per step (eq. 9: L^VF = (V(s_t) - V^targ_t)^2), halved as rlax's ``l2_loss``; the target
    (the GAE(lambda) return A_t + V_old(s_t)) is a constant."""
    return 0.5 * (jnp.asarray(v_tm1) - jax.lax.stop_gradient(jnp.asarray(target_t))) ** 2
