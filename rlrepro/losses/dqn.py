"""DQN-family losses of Evolving RL Algorithms (Co-Reyes et al. 2021, §4.3), single-stream rlax style.

Every function takes ONE transition (``q_tm1`` [A] online Q-values at s_tm1, ``a_tm1``, ``r_t``,
``discount_t`` = gamma * (1 - terminal_t), ``q_t`` [A] target-network Q-values at s_t) and returns the
per-transition loss; the learner ``vmap``s and averages over the batch. Targets are wrapped in
``stop_gradient``: gradients reach only the online Q(s_tm1, a_tm1) (notes §1.5).

The "TD term" is ``td_scale * (Q - Y)^2``: the paper prints delta^2 (``td_scale=1``); the released graphs
use L2Distance = 0.5 * delta^2 (``td_scale=0.5``). The fixed point of DQN does not depend on it; DQNReg's does.
Every loss here defaults to the spec model's ``DEFAULT_TD_SCALE`` (1: the printed form, notes §5 item 1).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from rlrepro.specs.agents.dqn import DEFAULT_TD_SCALE  # the one default, stated in the spec model


def _q_and_target(q_tm1: ArrayLike, a_tm1: ArrayLike, r_t: ArrayLike, discount_t: ArrayLike, q_t: ArrayLike):
    """Q = Q(s_tm1, a_tm1), M = max_a Q'(s_t, a) and Y = r_t + discount_t * M (M and Y without gradient)."""
    q = jnp.asarray(q_tm1)[a_tm1]
    m = jax.lax.stop_gradient(jnp.max(jnp.asarray(q_t)))
    y = jax.lax.stop_gradient(r_t + discount_t * m)
    return q, m, y


def dqn_loss(
    q_tm1: ArrayLike, a_tm1: ArrayLike, r_t: ArrayLike, discount_t: ArrayLike, q_t: ArrayLike, *, td_scale: float = DEFAULT_TD_SCALE
) -> jax.Array:
    """DQN (Mnih et al. 2015) as the paper's Fig. 2 graph: td_scale * (Q - (r + gamma_t max_a Q'(s', a)))^2, no Huber."""
    q, _, y = _q_and_target(q_tm1, a_tm1, r_t, discount_t, q_t)
    return td_scale * (q - y) ** 2


def ddqn_loss(
    q_tm1: ArrayLike,
    a_tm1: ArrayLike,
    r_t: ArrayLike,
    discount_t: ArrayLike,
    q_t_value: ArrayLike,
    q_t_selector: ArrayLike,
    *,
    td_scale: float = DEFAULT_TD_SCALE,
) -> jax.Array:
    """Double DQN (van Hasselt et al. 2016): the online net picks argmax_a Q(s', a), the target net values it."""
    q = jnp.asarray(q_tm1)[a_tm1]
    best = jnp.argmax(jnp.asarray(q_t_selector))
    y = jax.lax.stop_gradient(r_t + discount_t * jnp.asarray(q_t_value)[best])
    return td_scale * (q - y) ** 2


def dqnreg_loss(
    q_tm1: ArrayLike,
    a_tm1: ArrayLike,
    r_t: ArrayLike,
    discount_t: ArrayLike,
    q_t: ArrayLike,
    *,
    k: float = 0.1,
    td_scale: float = DEFAULT_TD_SCALE,
) -> jax.Array:
    """DQNReg (§4.3): L = k * Q(s_t, a_t) + td_scale * delta^2; printed form td_scale=1, released graph 0.5.

    One-state fixed point (gradient td_scale * 2 * delta + k = 0 at Q = Y): Q* = (r - k / (2 td_scale)) / (1 - gamma).
    """
    q, _, y = _q_and_target(q_tm1, a_tm1, r_t, discount_t, q_t)
    return k * q + td_scale * (q - y) ** 2


def dqnclipped_loss(
    q_tm1: ArrayLike,
    a_tm1: ArrayLike,
    r_t: ArrayLike,
    discount_t: ArrayLike,
    q_t: ArrayLike,
    *,
    clip_discount: ArrayLike | None = None,
    td_scale: float = DEFAULT_TD_SCALE,
) -> jax.Array:
    """DQNClipped (§4.3): L = max(Q, td_scale * delta^2 + Y) + max(Q - Y, gamma * M^2).

    ``clip_discount`` is the gamma of the second max: None uses ``discount_t`` (per transition, 0 at terminals,
    the graph's ``discount`` input node); pass the constant gamma for the SB3 reading (notes §5, item 2).
    """
    q, m, y = _q_and_target(q_tm1, a_tm1, r_t, discount_t, q_t)
    gamma = discount_t if clip_discount is None else clip_discount
    return jnp.maximum(q, td_scale * (q - y) ** 2 + y) + jnp.maximum(q - y, gamma * m**2)


def dqnclipped_case(q_tm1: ArrayLike, a_tm1: ArrayLike, r_t: ArrayLike, discount_t: ArrayLike, q_t: ArrayLike,
                    *, clip_discount: ArrayLike | None = None, td_scale: float = DEFAULT_TD_SCALE) -> jax.Array:
    """Which of the four cases of Fig. 6 is active (1..4): 1 both maxes left, 2 left/right, 3 both right, 4 right/left."""
    q, m, y = _q_and_target(q_tm1, a_tm1, r_t, discount_t, q_t)
    gamma = discount_t if clip_discount is None else clip_discount
    left1 = q > td_scale * (q - y) ** 2 + y
    left2 = (q - y) > gamma * m**2
    return jnp.where(left1, jnp.where(left2, 1, 2), jnp.where(left2, 4, 3))
