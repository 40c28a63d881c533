"""V-trace targets and policy-gradient advantages (IMPALA, Espeholt et al., 2018, section 4).

Single stream, time-major, shapes [T]. The learner maps over the batch axis, e.g.
``jax.vmap(functools.partial(vtrace, lambda_=...), in_axes=1, out_axes=1)`` on [T, B] arrays
(keyword arguments of a vmapped function are mapped over axis 0, so bind them with ``partial``).
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


class VTraceOutput(NamedTuple):
    """What ``vtrace`` returns; every field has shape [T].

    Attributes:
      errors: ``v_s - V(x_s)``, with ``v_s`` behind a stop-gradient (so the gradient of the
        errors flows only into ``-V(x_s)``). Square and scale these for the baseline loss.
      pg_advantage: ``min(clip_pg_rho_threshold, rho_s) * (q_s - V(x_s))``, stop-gradient.
      q_estimate: ``q_s = r_s + discount_s * v_{s+1}``, stop-gradient.
    """

    errors: jax.Array
    pg_advantage: jax.Array
    q_estimate: jax.Array


def _correction_tm1(
    td_error_tm1: jax.Array, discount_t: jax.Array, c_tm1: jax.Array
) -> jax.Array:
    """Returns ``corr_s = v_s - V(x_s)`` from ``corr_s = delta_s + discount_s c_s corr_{s+1}``.

    This is IMPALA Remark 1 with ``v_{s+1} - V(x_{s+1}) = corr_{s+1}`` and ``corr_T = 0`` (the
    bootstrap), i.e. eq. (1) unrolled backwards with a reverse scan.
    """

    def step(corr_tp1: jax.Array, xs: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
        delta, discount, c = xs
        corr = delta + discount * c * corr_tp1
        return corr, corr

    corr_T = jnp.zeros((), dtype=td_error_tm1.dtype)
    _, corr_tm1 = jax.lax.scan(step, corr_T, (td_error_tm1, discount_t, c_tm1), reverse=True)
    return corr_tm1


def vtrace(
    v_tm1: ArrayLike,
    v_t: ArrayLike,
    r_t: ArrayLike,
    discount_t: ArrayLike,
    rho_tm1: ArrayLike,
    *,
    lambda_: ArrayLike = 1.0,
    clip_rho_threshold: float = 1.0,
    clip_pg_rho_threshold: float = 1.0,
    clip_c_threshold: float = 1.0,
) -> VTraceOutput:
    """V-trace value targets and policy-gradient advantages for one trajectory.

    Implements IMPALA (Espeholt et al., ICML 2018) section 4.1, eq. (1)::

      v_s = V(x_s) + sum_{t=s}^{s+n-1} discount^{t-s} (prod_{i=s}^{t-1} c_i) delta_t V
      delta_t V = rho_t (r_t + discount_t V(x_{t+1}) - V(x_t))
      rho_t = min(rho_bar, pi/mu),   c_i = lambda * min(c_bar, pi/mu)   (Remark 2)

    computed with the recursion of Remark 1 in a reverse ``jax.lax.scan``, with per-step
    discounts (0 at an episode end, which cuts both the trace and the bootstrap), and the
    section 4.2 policy-gradient advantage ``rho_pg_s (q_s - V(x_s))``, ``q_s = r_s + discount_s
    v_{s+1}``, ``v_T := V(x_T)`` (the bootstrap ``v_t[-1]``).

    Difference from ``rlax.vtrace_td_error_and_advantage`` for lambda < 1: rlax uses
    ``q_s = r_s + discount_s (lambda v_{s+1} + (1 - lambda) V(x_{s+1}))``; we follow the paper
    literally (Remark 2 changes only the traces c_i), so ``q_s = r_s + discount_s v_{s+1}``.
    The value targets ``v_s`` are identical; the pg advantages differ. For lambda = 1 the two
    agree.

    ``V(x_{s+1})`` is always read from ``v_t`` and ``V(x_s)`` from ``v_tm1``; the learner
    passes ``v_t = concat(v_tm1[1:], [bootstrap])``. The paper assumes
    ``clip_rho_threshold >= clip_c_threshold``; this is not checked.

    Args:
      v_tm1: V(x_s) for s = 0..T-1, shape [T].
      v_t: V(x_{s+1}) for s = 0..T-1, shape [T]; ``v_t[-1]`` is the bootstrap value.
      r_t: rewards r_s, shape [T].
      discount_t: gamma * (1 - done_s), shape [T].
      rho_tm1: unclipped importance ratios pi(a_s|x_s) / mu(a_s|x_s) (ratios, not
        log-ratios), shape [T].
      lambda_: trace parameter of Remark 2, scalar or shape [T].
      clip_rho_threshold: rho_bar, truncation of rho in delta_t V.
      clip_pg_rho_threshold: truncation of rho in the policy-gradient advantage.
      clip_c_threshold: c_bar, truncation of the traces c_i.

    Returns:
      ``VTraceOutput(errors, pg_advantage, q_estimate)``, each of shape [T].
    """
    v_tm1, v_t, r_t, discount_t, rho_tm1 = (
        jnp.asarray(x) for x in (v_tm1, v_t, r_t, discount_t, rho_tm1)
    )
    chex.assert_rank([v_tm1, v_t, r_t, discount_t, rho_tm1], 1)
    chex.assert_equal_shape([v_tm1, v_t, r_t, discount_t, rho_tm1])

    rho_clipped_tm1 = jnp.minimum(clip_rho_threshold, rho_tm1)
    c_tm1 = jnp.asarray(lambda_) * jnp.minimum(clip_c_threshold, rho_tm1)
    td_error_tm1 = r_t + discount_t * v_t - v_tm1
    corr_tm1 = _correction_tm1(rho_clipped_tm1 * td_error_tm1, discount_t, c_tm1)
    vs_tm1 = jax.lax.stop_gradient(v_tm1 + corr_tm1)

    # v_{s+1} = V(x_{s+1}) + corr_{s+1}, with corr_T = 0 so that v_T is the bootstrap value.
    corr_t = jnp.concatenate([corr_tm1[1:], jnp.zeros_like(corr_tm1[:1])])
    q_tm1 = jax.lax.stop_gradient(r_t + discount_t * (v_t + corr_t))
    rho_pg_tm1 = jnp.minimum(clip_pg_rho_threshold, rho_tm1)
    pg_advantage_tm1 = jax.lax.stop_gradient(rho_pg_tm1 * (q_tm1 - v_tm1))

    return VTraceOutput(
        errors=vs_tm1 - v_tm1, pg_advantage=pg_advantage_tm1, q_estimate=q_tm1
    )
