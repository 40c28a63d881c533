"""Returns, the consistency loss and the inner losses of FRODO (Xu et al. 2020, "Meta-Gradient Reinforcement
Learning with an Objective Discovered Online", §3-5, App. C listings).

Single stream, time-major, shapes [T] (rlax conventions): ``r_t[k]`` and ``discount_t[k]`` are R_{k+1} and
gamma_{k+1} of the transition S_k -> S_{k+1}; ``discount_t`` is 0 at an episode end, which cuts every return.
Functions return per-step terms; learners square, scale, reduce and ``vmap`` over the batch axis.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import chex
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from rlrepro.losses.policy_gradient import entropy, log_prob

ConsistencyForm = Literal["n_step", "one_step"]


def discounted_returns(r_t: ArrayLike, discount_t: ArrayLike, bootstrap: ArrayLike) -> jax.Array:
    """G_k = r_t[k] + discount_t[k] G_{k+1}, with G_{T-1} = r_t[-1] + discount_t[-1] * bootstrap (rlax semantics).

    Listing C.2's outer target ("TD(1)": the return to the end of the trajectory bootstrapped from the last
    value) and the Monte Carlo return with ``bootstrap = 0`` over complete episodes.

    Args:
      r_t: rewards, [T].
      discount_t: per-step discounts, [T].
      bootstrap: scalar value of the state after the last step.

    Returns:
      the returns, [T].
    """
    r_t, discount_t = jnp.asarray(r_t), jnp.asarray(discount_t)
    chex.assert_rank([r_t, discount_t], 1)
    chex.assert_equal_shape([r_t, discount_t])
    v_t = jnp.zeros_like(r_t).at[-1].set(jnp.asarray(bootstrap, r_t.dtype))
    return lambda_returns(r_t, discount_t, v_t, 1.0)


def lambda_returns(r_t: ArrayLike, discount_t: ArrayLike, v_t: ArrayLike, lambda_: ArrayLike = 1.0) -> jax.Array:
    """Lambda-returns G^lambda_k = r_t[k] + discount_t[k] ((1 - lambda) v_t[k] + lambda G^lambda_{k+1}).

    The forward view of TD(lambda) (Sutton & Barto, §12.1) over a trajectory, bootstrapping the last step
    from ``v_t[-1]`` (rlax ``lambda_returns``): lambda = 0 is the one-step TD target, lambda = 1 the
    return to the end of the trajectory. No gradient is stopped here; callers stop it on targets.

    Args:
      r_t: rewards, [T].
      discount_t: per-step discounts, [T].
      v_t: values of the next states v(S_{k+1}), [T].
      lambda_: scalar or [T] mixing parameter.

    Returns:
      the lambda-returns, [T].
    """
    r_t, discount_t, v_t = jnp.asarray(r_t), jnp.asarray(discount_t), jnp.asarray(v_t)
    chex.assert_rank([r_t, discount_t, v_t], 1)
    chex.assert_equal_shape([r_t, discount_t, v_t])
    lambda_ = jnp.broadcast_to(jnp.asarray(lambda_, r_t.dtype), r_t.shape)

    # A Python loop over the (static, short) time axis rather than lax.scan: these returns sit inside
    # second-order meta-gradients, where unrolled code compiles several times faster on XLA:CPU.
    g, returns = v_t[-1], []
    for k in reversed(range(r_t.shape[0])):
        g = r_t[k] + discount_t[k] * ((1.0 - lambda_[k]) * v_t[k] + lambda_[k] * g)
        returns.append(g)
    return jnp.stack(returns[::-1])


def consistency_errors(
    r_t: ArrayLike,
    discount_t: ArrayLike,
    g_t: ArrayLike,
    *,
    form: ConsistencyForm = "n_step",
    listing_offbyone: bool = False,
) -> jax.Array:
    """Per-step errors ``sg(target_k) - G_k`` of FRODO's consistency loss (§5.2, eqs. 12-13, listing C.4).

    The learned targets are regularised towards self-consistency, G_k = R_{k+1} + gamma_{k+1} G_{k+1} (12).
    - ``one_step`` (eq. 13): target_k = r_t[k] + discount_t[k] G_{k+1}, for k = 0..T-2.
    - ``n_step`` (the listing's decomposition into discounted rewards plus a bootstrap on G): target_k =
      sum of the discounted rewards from k to T-2, then G_{T-1}; i.e. ``discounted_returns(r[:-1],
      d[:-1], G[-1])`` compared with ``G[:-1]`` (notes §5 item 2).
    - ``listing_offbyone=True`` reproduces listing C.4 exactly: ``discounted_returns(r, d, G[-1])[:-1]``,
      which bootstraps the last step's recursion from G_{T-1} itself (one reward and one discount too many).
    An episode end inside the trajectory (discount 0) cuts the recursion, so each episode's targets only
    use its own G and rewards. The loss is ``0.5 * sum(errors**2)``; its gradient reaches only G_k.

    Args:
      r_t: rewards, [T].
      discount_t: per-step discounts, [T].
      g_t: the meta-network's targets G_k for the trajectory's T steps, [T].
      form: "n_step" or "one_step".
      listing_offbyone: reproduce the off-by-one of listing C.4 (n_step only).

    Returns:
      errors for k = 0..T-2, [T - 1].
    """
    r_t, discount_t, g_t = jnp.asarray(r_t), jnp.asarray(discount_t), jnp.asarray(g_t)
    chex.assert_rank([r_t, discount_t, g_t], 1)
    chex.assert_equal_shape([r_t, discount_t, g_t])
    if form == "one_step":
        target = r_t[:-1] + discount_t[:-1] * g_t[1:]
    elif form == "n_step":
        if listing_offbyone:
            target = discounted_returns(r_t, discount_t, g_t[-1])[:-1]
        else:
            target = discounted_returns(r_t[:-1], discount_t[:-1], g_t[-1])
    else:
        raise ValueError(f"form must be 'n_step' or 'one_step', got {form!r}")
    return jax.lax.stop_gradient(target) - g_t[:-1]


def prediction_errors(g_t: ArrayLike, v_tm1: ArrayLike) -> jax.Array:
    """Per-step errors ``G_k - v(S_k)`` of the prediction update (eq. 8) and of the outer TD(1) loss (eq. 9).

    The target is NOT stop-gradiented here: the inner update must keep the path G_eta -> eta for the
    meta-gradient. Semi-gradient w.r.t. the agent comes from computing G outside the agent's ``grad``
    (notes §5 item 1); for fixed targets (outer losses) stop the gradient before calling.
    """
    g_t, v_tm1 = jnp.asarray(g_t), jnp.asarray(v_tm1)
    chex.assert_equal_shape([g_t, v_tm1])
    return g_t - v_tm1


class ActorCriticTerms(NamedTuple):
    """Per-step terms of the inner actor-critic loss, [T] each (eq. 10, listing C.4)."""

    pg: jax.Array
    baseline: jax.Array
    entropy: jax.Array


def target_actor_critic_terms(logits_tm1: ArrayLike, a_tm1: ArrayLike, v_tm1: ArrayLike, g_t: ArrayLike) -> ActorCriticTerms:
    """The actor-critic update towards a learned target G (eq. 10, listing C.4).

    ``pg = -(G - sg(v)) log pi(a|s)``, ``baseline = 0.5 (G - v)^2``, ``entropy = H(pi(.|s))``: the update
    direction is (G - v) grad log pi + c1 (G - v) grad v + c2 grad H. As in ``prediction_errors``, G is
    not stop-gradiented (the meta-gradient needs it); the learner computes it outside the agent's grad.

    Args:
      logits_tm1: policy logits at S_k, [T, A].
      a_tm1: actions A_k, [T].
      v_tm1: values v(S_k), [T].
      g_t: targets G_k, [T].
    """
    v_tm1, g_t = jnp.asarray(v_tm1), jnp.asarray(g_t)
    chex.assert_equal_shape([v_tm1, g_t])
    advantage = g_t - jax.lax.stop_gradient(v_tm1)
    return ActorCriticTerms(
        pg=-advantage * log_prob(logits_tm1, a_tm1),
        baseline=0.5 * jnp.square(g_t - v_tm1),
        entropy=entropy(logits_tm1),
    )


def fixed_target_actor_critic_terms(
    logits_tm1: ArrayLike, a_tm1: ArrayLike, v_tm1: ArrayLike, g_t: ArrayLike
) -> ActorCriticTerms:
    """``target_actor_critic_terms`` with G stop-gradiented: the ordinary actor-critic update with a fixed return.

    Used by the outer losses (Monte Carlo return on Catch, §4) where G does not depend on the agent.
    """
    return target_actor_critic_terms(logits_tm1, a_tm1, v_tm1, jax.lax.stop_gradient(jnp.asarray(g_t)))
