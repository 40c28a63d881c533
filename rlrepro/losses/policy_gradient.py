"""Per-step policy-gradient and entropy terms of the IMPALA actor-critic loss (section 4.2).

Single stream, time-major: logits [T, A], actions [T], advantages [T]. Every function
returns a [T] array of per-step terms; the learner sums (IMPALA sums over batch and time,
Table D.1 note), scales and maps over the batch axis.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


def log_prob(logits_t: ArrayLike, a_t: ArrayLike) -> jax.Array:
    """log pi(a_t|x_t) from unnormalised logits, via ``log_softmax`` (numerically stable).

    Args:
      logits_t: policy logits, shape [T, A].
      a_t: integer actions, shape [T].

    Returns:
      log-probabilities of the taken actions, shape [T].
    """
    logits_t, a_t = jnp.asarray(logits_t), jnp.asarray(a_t)
    chex.assert_rank([logits_t, a_t], [2, 1])
    log_pi_t = jax.nn.log_softmax(logits_t, axis=-1)
    return jnp.take_along_axis(log_pi_t, a_t[:, None].astype(jnp.int32), axis=-1)[:, 0]


def policy_gradient_loss(
    logits_t: ArrayLike,
    a_t: ArrayLike,
    adv_t: ArrayLike,
    *,
    log_prob_epsilon: float = 0.0,
) -> jax.Array:
    """Per-step policy-gradient loss ``-log pi(a_t|x_t) * stop_gradient(adv_t)``.

    IMPALA section 4.2: the policy update direction is ``rho_s grad log pi(a_s|x_s)
    (q_s - V(x_s))``; pass the V-trace ``pg_advantage`` (which already contains the clipped
    rho) as ``adv_t``. With ``log_prob_epsilon > 0`` this is the "epsilon-correction" baseline
    of section 5.2.2 (epsilon = 1e-6 there): ``-log(pi(a_t|x_t) + epsilon) * adv_t``, so that
    log pi does not become very small. It is computed as
    ``logaddexp(log pi, log epsilon)``, which is stable and equals ``log pi`` for epsilon = 0.

    Args:
      logits_t: policy logits, shape [T, A].
      a_t: integer actions, shape [T].
      adv_t: advantages, shape [T]; no gradient flows into them.
      log_prob_epsilon: epsilon added to pi(a_t|x_t) inside the log; 0 disables it.

    Returns:
      per-step loss terms, shape [T].
    """
    log_pi_a_t = log_prob(logits_t, a_t)
    log_epsilon = jnp.log(jnp.asarray(log_prob_epsilon, log_pi_a_t.dtype))
    log_pi_a_t = jnp.logaddexp(log_pi_a_t, log_epsilon)
    adv_t = jnp.asarray(adv_t)
    chex.assert_equal_shape([log_pi_a_t, adv_t])
    return -log_pi_a_t * jax.lax.stop_gradient(adv_t)


def entropy(logits_t: ArrayLike) -> jax.Array:
    """Per-step policy entropy ``H(pi(.|x_t)) = -sum_a pi(a|x_t) log pi(a|x_t)``.

    IMPALA section 4.2 adds the entropy bonus direction ``-grad sum_a pi log pi``. Actions with
    probability exactly 0 (logits of -inf, e.g. masked actions) contribute 0, with finite
    gradients.

    Args:
      logits_t: policy logits, shape [T, A].

    Returns:
      entropies, shape [T].
    """
    logits_t = jnp.asarray(logits_t)
    chex.assert_rank(logits_t, 2)
    log_pi_t = jax.nn.log_softmax(logits_t, axis=-1)
    pi_t = jnp.exp(log_pi_t)
    # 0 * log 0 := 0; the inner `where` keeps -inf out of the gradient of the outer one.
    safe_log_pi_t = jnp.where(pi_t > 0, log_pi_t, 0.0)
    return -jnp.sum(pi_t * safe_log_pi_t, axis=-1)
