"""Continuous-action ACER's losses (Wang et al. 2017, "Sample Efficient Actor-Critic with Experience Replay",
§3-§5 and Alg. 3), as the ReF-ER paper runs it as a baseline (Novati & Koumoutsakos 2019, App. A).

Single-stream functions in rlax style for one sampled sequence of T steps, transition t: s_t, a_t -> r_t, s_{t+1}
(time-suffixed names): they return per-step terms; the learner ``vmap``s over sequences, reduces and
differentiates. Episode ends inside a sequence: a true terminal has ``discount_t = 0`` (nothing follows); a
time-limit truncation keeps ``discount_t = gamma`` with ``v_next_t`` = V(final observation), so the target
bootstraps from it; in both cases, and at the last step of a sampled window, ``continue_t = 0`` cuts the trace.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from rlrepro.losses.refer import gaussian_kl, gaussian_log_prob


def stochastic_dueling_q(v: ArrayLike, adv_a: ArrayLike, adv_samples: ArrayLike) -> jax.Array:
    """The stochastic dueling network (ACER §5.1): Q~(s, a) = V(s) + A(s, a) - (1/n) sum_i A(s, u_i), u_i ~ pi.

    Args:
      v: [..] V(s). adv_a: [..] A(s, a). adv_samples: [.., n] A(s, u_i) of n actions drawn from pi(.|s).
    """
    return jnp.asarray(v) + jnp.asarray(adv_a) - jnp.mean(jnp.asarray(adv_samples), axis=-1)


def trace_coefficients(log_rho_t: ArrayLike, action_dim: int) -> jax.Array:
    """Retrace's truncated trace for continuous actions (ACER §5.2): c_t = min(1, rho_t^(1/d)), d = action dim."""
    return jnp.minimum(1.0, jnp.exp(jnp.asarray(log_rho_t) / action_dim))


def retrace_q_ret(
    r_t: ArrayLike, discount_t: ArrayLike, continue_t: ArrayLike, v_next_t: ArrayLike, q_tilde_t: ArrayLike,
    c_t: ArrayLike,
) -> jax.Array:
    """Q^ret of a sequence by the backward recursion of ACER Alg. 3 (continuous, eq. 16 with V(s_{t+1})):

        Q^ret_t = r_t + discount_t [V(s_{t+1}) + continue_t c_{t+1} (Q^ret_{t+1} - Q~(s_{t+1}, a_{t+1}))]

    With ``c_t`` = 1 this is Q^opc (ACER §5.2: the policy gradient's target uses c = 1). No gradient flows through
    the result (it is a target).

    Args:
      r_t: [T] rewards. discount_t: [T] gamma, 0 where s_{t+1} is a true terminal.
      continue_t: [T] 1 where step t+1 follows in this sequence, 0 where the trace is cut (an episode's or the
        window's last step): there Q^ret_t = r_t + discount_t V(s_{t+1}).
      v_next_t: [T] V(s_{t+1}) (the final observation's value at a truncation; ignored at a terminal).
      q_tilde_t: [T] Q~(s_t, a_t). c_t: [T] trace coefficients of step t (used for the step before it).
    """
    r_t, discount_t, continue_t, v_next_t, q_tilde_t, c_t = (
        jax.lax.stop_gradient(jnp.asarray(x, jnp.float32)) for x in (r_t, discount_t, continue_t, v_next_t, q_tilde_t, c_t)
    )
    # The correction step t+1 hands back to step t: c_{t+1} (Q^ret_{t+1} - Q~_{t+1}), 0 after the last step.
    def body(correction_next, xs):
        r, discount, cont, v_next, q_tilde, c = xs
        q_ret = r + discount * (v_next + cont * correction_next)
        return c * (q_ret - q_tilde), q_ret

    _, q_ret = jax.lax.scan(body, jnp.zeros((), jnp.float32), (r_t, discount_t, continue_t, v_next_t, q_tilde_t, c_t),
                            reverse=True)
    return q_ret


def value_target(q_ret: ArrayLike, q_tilde: ArrayLike, v: ArrayLike, log_rho: ArrayLike) -> jax.Array:
    """V's target (ACER §5.2, continuous): V^target = min(1, rho) (Q^ret - Q~) + V (a target: no gradient)."""
    rho_bar = jnp.minimum(1.0, jnp.exp(jnp.asarray(log_rho)))
    return jax.lax.stop_gradient(rho_bar * (jnp.asarray(q_ret) - q_tilde) + v)


def truncation_with_bias_correction_gains(
    log_rho: ArrayLike, q_opc: ArrayLike, v: ArrayLike, log_rho_sample: ArrayLike, adv_sample: ArrayLike, c: float
) -> tuple[jax.Array, jax.Array]:
    """The two scalar weights of ACER's truncated policy gradient with bias correction (ACER eq. 9 / §5.3, one
    sample a' ~ pi for the expectation, as ACER does for continuous actions):

        g = min(c, rho_t) (Q^opc_t - V(s_t)) grad log pi(a_t)
            + [1 - c / rho(a')]_+ (Q~(s_t, a') - V(s_t)) grad log pi(a')

    Returns (gain of grad log pi(a_t), gain of grad log pi(a')), without gradient.

    Args:
      log_rho: log pi(a_t)/mu(a_t). q_opc: Q^opc_t. v: V(s_t).
      log_rho_sample: log pi(a')/mu(a') of the sample a'. adv_sample: Q~(s_t, a') - V(s_t) = A(s, a') - mean_i A(s, u_i).
      c: the truncation constant (ReF-ER App. A: 5).
    """
    rho, rho_sample = jnp.exp(jnp.asarray(log_rho)), jnp.exp(jnp.asarray(log_rho_sample))
    gain_taken = jnp.minimum(c, rho) * (jnp.asarray(q_opc) - v)
    gain_sample = jnp.maximum(0.0, 1.0 - c / rho_sample) * jnp.asarray(adv_sample)
    return jax.lax.stop_gradient(gain_taken), jax.lax.stop_gradient(gain_sample)


def trust_region_projection(g: ArrayLike, k: ArrayLike, delta: float) -> jax.Array:
    """ACER's efficient trust region (eq. 12-13): the z closest to g with k . z <= delta,

        z* = g - max(0, (k . g - delta) / |k|^2) k.

    ``g`` and ``k`` are flat vectors over the distribution statistics phi (no gradient flows through z*).
    """
    g, k = jnp.asarray(g), jnp.asarray(k)
    scale = jnp.maximum(0.0, (jnp.dot(k, g) - delta) / jnp.maximum(jnp.dot(k, k), 1e-12))
    return jax.lax.stop_gradient(g - scale * k)


def acer_policy_statistics_gradient(
    mean: ArrayLike, std: ArrayLike, avg_mean: ArrayLike, avg_std: ArrayLike, action: ArrayLike, sample: ArrayLike,
    gain_taken: ArrayLike, gain_sample: ArrayLike, delta: float,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The ascent direction z* on one step's Gaussian statistics phi = (mean, std) (ACER §3.3 and §5):

        g = gain_taken grad_phi log pi(a_t|phi) + gain_sample grad_phi log pi(a'|phi)
        k = grad_phi D_KL(f(phi_avg) || f(phi))
        z* = trust_region_projection(g, k, delta)

    Returns z* split as (d/d mean, d/d std) and whether the constraint was active (k . g > delta); the learner
    back-propagates z* through the policy network (loss = -sum z* . phi).
    """
    action, sample = jax.lax.stop_gradient(jnp.asarray(action)), jax.lax.stop_gradient(jnp.asarray(sample))

    def objective(m, s):
        return gain_taken * gaussian_log_prob(action, m, s) + gain_sample * gaussian_log_prob(sample, m, s)

    g_mean, g_std = jax.grad(objective, argnums=(0, 1))(mean, std)
    k_mean, k_std = jax.grad(lambda m, s: gaussian_kl(avg_mean, avg_std, m, s), argnums=(0, 1))(mean, std)
    d = g_mean.shape[-1]
    g, k = jnp.concatenate([g_mean, g_std]), jnp.concatenate([k_mean, k_std])
    z = trust_region_projection(g, k, delta)
    return z[:d], z[d:], jax.lax.stop_gradient(jnp.dot(k, g) > delta)
