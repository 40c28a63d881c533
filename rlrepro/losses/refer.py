"""ReF-ER rules (Novati & Koumoutsakos 2019, §3, eqs. 10-13) and V-RACER's targets and losses (§2, eqs. 5-9).

Single-stream functions in rlax style: the learner ``vmap``s over the minibatch and reduces. Everything a
rule treats as a constant (beta, the near mask, c_max, the TBC target and the advantage) is wrapped in
``stop_gradient`` here (notes §1.6). The schedules and the beta update work on numpy or jax scalars alike.

Variants (notes §1.2): ``refer`` = rule 1 + rule 2; ``refer1`` = rule 1 only (beta = 1, no KL);
``refer2`` = rule 2 only (no skipping); ``er`` and ``per`` = plain replay (every sample, no KL; ``per`` samples by
rank of |TD error| and weights each sample's loss by its importance weight, ``rlrepro.replay.priority``).
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

Variant = Literal["er", "per", "refer", "refer1", "refer2"]
VARIANTS: tuple[str, ...] = ("er", "per", "refer", "refer1", "refer2")
KLDirection = Literal["mu_pi", "pi_mu"]

# smarties@2019 (Math/Gaussian_policy.h) clips log rho to [-7, 7] before exp (notes §1.1).
LOG_RHO_CLIP = 7.0


def uses_rule1(variant: str) -> bool:
    """Rule 1 (far samples give no gradient): ReF-ER and ReF-ER-1."""
    return variant in ("refer", "refer1")


def uses_rule2(variant: str) -> bool:
    """Rule 2 (KL penalty with weight 1 - beta, beta driven by eq. 12): ReF-ER and ReF-ER-2."""
    return variant in ("refer", "refer2")


def uses_priorities(variant: str) -> bool:
    """Rank-based PER: samples drawn by rank of |TD error|, each sample's loss weighted by its importance weight."""
    return variant == "per"


def c_max_schedule(t: ArrayLike, c: float, a: float):
    """Eq. 13: c_max(t) = 1 + C / (1 + A t), t the environment step (C = 4, A = 5e-7: 5 at t = 0, 1.667 at 1e7)."""
    return 1.0 + c / (1.0 + a * t)


def learning_rate_schedule(t: ArrayLike, learning_rate: float, a: float):
    """Eq. 13: eta(t) = eta / (1 + A t)."""
    return learning_rate / (1.0 + a * t)


def beta_update(beta: ArrayLike, far_fraction: ArrayLike, target: float, rate: ArrayLike):
    """Eq. 12: beta <- (1 - eta) beta if n_far / N > D, else (1 - eta) beta + eta. Stays in [0, 1]."""
    return (1.0 - rate) * beta + rate * (far_fraction <= target)


def near_policy(log_rho: ArrayLike, c_max: ArrayLike) -> jax.Array:
    """Near-policy iff 1 / c_max < rho < c_max (strict; symmetric in log rho), as float 1/0 without gradient."""
    near = jnp.abs(jnp.asarray(log_rho)) < jnp.log(c_max)
    return jax.lax.stop_gradient(near.astype(jnp.float32))


def rule_weights(variant: str, near: ArrayLike, beta: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """(weight of the algorithm's loss, weight of the KL penalty) of one sample (eq. 10 in loss form).

    ``refer``: (beta * near, 1 - beta); ``refer1``: (near, 0); ``refer2``: (beta, 1 - beta); ``er``/``per``: (1, 0).
    """
    near, beta = jnp.asarray(near, jnp.float32), jax.lax.stop_gradient(jnp.asarray(beta, jnp.float32))
    alg = {"refer": beta * near, "refer1": near, "refer2": beta + 0.0 * near}.get(variant, jnp.ones_like(near))
    kl = (1.0 - beta) + 0.0 * near if uses_rule2(variant) else jnp.zeros_like(near)
    return jax.lax.stop_gradient(alg), jax.lax.stop_gradient(kl)


def gaussian_log_prob(a: ArrayLike, mean: ArrayLike, std: ArrayLike) -> jax.Array:
    """log N(a; mean, diag(std^2)) summed over action dimensions."""
    z = (jnp.asarray(a) - mean) / std
    return jnp.sum(-0.5 * z**2 - jnp.log(std) - 0.5 * jnp.log(2.0 * jnp.pi))


def gaussian_kl(mean_p: ArrayLike, std_p: ArrayLike, mean_q: ArrayLike, std_q: ArrayLike) -> jax.Array:
    """D_KL(p || q) of diagonal Gaussians: 1/2 sum[s_p^2/s_q^2 - 1 - ln(s_p^2/s_q^2) + (m_q - m_p)^2/s_q^2]."""
    ratio = (jnp.asarray(std_p) / std_q) ** 2
    return 0.5 * jnp.sum(ratio - 1.0 - jnp.log(ratio) + (jnp.asarray(mean_q) - mean_p) ** 2 / jnp.asarray(std_q) ** 2)


def behaviour_kl(
    mu_mean: ArrayLike, mu_std: ArrayLike, pi_mean: ArrayLike, pi_std: ArrayLike, direction: KLDirection = "mu_pi"
) -> jax.Array:
    """The KL of rule 2 between the stored behaviour mu and the current policy pi (gradient reaches pi only).

    ``mu_pi``: D_KL(mu || pi) as the paper writes it (eq. 11); ``pi_mu``: D_KL(pi || mu) as smarties@2019 computes
    it (notes §4 item 1). They coincide when the variances are equal.
    """
    mu_mean, mu_std = jax.lax.stop_gradient(mu_mean), jax.lax.stop_gradient(mu_std)
    if direction == "mu_pi":
        return gaussian_kl(mu_mean, mu_std, pi_mean, pi_std)
    return gaussian_kl(pi_mean, pi_std, mu_mean, mu_std)


def log_importance_ratio(a: ArrayLike, pi_mean, pi_std, mu_mean, mu_std) -> jax.Array:
    """log rho = log pi(a|s) - log mu(a|s), clipped to [-7, 7] (smarties@2019)."""
    log_rho = gaussian_log_prob(a, pi_mean, pi_std) - gaussian_log_prob(a, mu_mean, mu_std)
    return jnp.clip(log_rho, -LOG_RHO_CLIP, LOG_RHO_CLIP)


class VRacerTerms(NamedTuple):
    """Per-sample pieces of the V-RACER loss: the value loss (eq. 9), the off-policy PG loss (eq. 5), the KL of
    rule 2, and the importance ratio's log and the value (written back to the replay memory)."""

    value_loss: jax.Array
    policy_loss: jax.Array
    kl: jax.Array
    log_rho: jax.Array
    v: jax.Array


def vracer_terms(
    v: ArrayLike,
    pi_mean: ArrayLike,
    pi_std: ArrayLike,
    a: ArrayLike,
    mu_mean: ArrayLike,
    mu_std: ArrayLike,
    q_ret: ArrayLike,
    *,
    rho_cap: float | None = None,
    kl_direction: KLDirection = "mu_pi",
) -> VRacerTerms:
    """V-RACER's per-sample losses, with Q_w := V_w (§2, App. A).

    V^tbc = V + min(1, rho) (Q^ret - V) (eq. 7) is the constant target of L^tbc = 1/2 (V - V^tbc)^2 (eq. 9);
    L^off-PG = -rho (Q^ret - V) with the advantage constant (eq. 5): the gradient is rho A grad log pi, with rho
    not truncated (capped at ``rho_cap`` for ReF-ER-2, §5.3).
    """
    log_rho = log_importance_ratio(a, pi_mean, pi_std, mu_mean, mu_std)
    rho = jnp.exp(log_rho)
    if rho_cap is not None:
        rho = jnp.minimum(rho, rho_cap)
    rho_bar = jax.lax.stop_gradient(jnp.minimum(1.0, rho))
    v_tbc = jax.lax.stop_gradient(v + rho_bar * (q_ret - v))
    advantage = jax.lax.stop_gradient(q_ret - v)
    value_loss = 0.5 * (v - v_tbc) ** 2
    policy_loss = -rho * advantage
    kl = behaviour_kl(mu_mean, mu_std, pi_mean, pi_std, kl_direction)
    return VRacerTerms(value_loss, policy_loss, kl, jax.lax.stop_gradient(log_rho), jax.lax.stop_gradient(v))


def retrace_q_ret(
    r_t: ArrayLike, v_t: ArrayLike, rho_bar_t: ArrayLike, discount_t: ArrayLike, bootstrap_t: ArrayLike
) -> jax.Array:
    """Q^ret of every stored step at once (eqs. 6-8 with Q_w := V_w), episodes laid end to end.

    Step k of the flat arrays: ``r_t[k]`` = r_{k+1}; ``v_t[k]``, ``rho_bar_t[k]`` = V and min(1, rho) of step
    k + 1 of the same episode; ``discount_t[k]`` = gamma inside an episode and 0 at its last step, where
    ``bootstrap_t[k]`` = gamma V(s_T) if the episode was truncated and 0 if it terminated. Then
    Q^ret_k = r_{k+1} + gamma V^tbc_{k+1}, V^tbc_{k+1} = V_{k+1} + rho_bar_{k+1} (Q^ret_{k+1} - V_{k+1}), i.e. the
    reverse linear recurrence Q^ret_k = a_k + c_k Q^ret_{k+1} with a_k = r + gamma (1 - rho_bar) V (+ bootstrap)
    and c_k = gamma rho_bar, computed with ``lax.associative_scan``; c_k = 0 at episode ends separates episodes.
    """
    a = r_t + discount_t * (1.0 - rho_bar_t) * v_t + bootstrap_t
    c = discount_t * rho_bar_t

    def combine(later, earlier):  # elements applied right to left: x_k = a_k + c_k x_{k+1}
        a_l, c_l = later
        a_e, c_e = earlier
        return a_e + c_e * a_l, c_e * c_l

    q_ret, _ = jax.lax.associative_scan(combine, (jnp.asarray(a), jnp.asarray(c)), reverse=True)
    return q_ret


class TransitionBatch(NamedTuple):
    """B stored steps (DDPG, NAF): standardised s, a (network units), scaled r, discount (0 after a terminal), s',
    mu's mean, and the importance weights of prioritised replay (1: uniform sampling)."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    discount: jax.Array
    next_obs: jax.Array
    mu_mean: jax.Array
    weight: jax.Array | float = 1.0


def weighted_mean(config: Any, batch: TransitionBatch, per_sample: jax.Array) -> jax.Array:
    """Mean over the minibatch, each sample weighted by its importance weight under PER (the other variants'
    programs stay the ones they always were, bit for bit)."""
    if uses_priorities(config.rules.variant):
        return jnp.mean(batch.weight * per_sample)
    return jnp.mean(per_sample)


# The rules' state on the host, per seed: beta (eq. 12) and the schedules of eq. 13, from the spec's rules
# (``rlrepro.training.refer_config.ReferConfig``).


def initial_beta(config: Any, num_seeds: int) -> np.ndarray:
    """beta0 under rule 2; 1 otherwise (rule 1 alone and plain ER never scale the gradient)."""
    return np.full(num_seeds, config.beta0 if uses_rule2(config.variant) else 1.0, np.float32)


def step_schedules(config: Any, t: int, learning_rate: float) -> tuple[float, float]:
    """(c_max(t), eta(t)) at environment step t (eq. 13)."""
    return float(c_max_schedule(t, config.c, config.a)), float(learning_rate_schedule(t, learning_rate, config.a))


def next_beta(config: Any, beta: np.ndarray, far_fraction: np.ndarray, eta_t: float) -> np.ndarray:
    """Eq. 12 under rule 2 (rate eta(t) or the fixed rate); beta stays 1 otherwise."""
    if not uses_rule2(config.variant):
        return beta
    rate = eta_t if config.beta_rate == "eta_t" else config.beta_rate_fixed
    return np.asarray(beta_update(beta, far_fraction, config.d, rate), np.float32)
