"""Tests for rlrepro.losses.vtrace (IMPALA section 4.1, eq. (1), Remarks 1 and 2)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rlax

from rlrepro.losses import log_prob, vtrace

# ---------------------------------------------------------------------------------------------
# Hand-computed trace, T = 3.
#   V(x_0..x_3) = 1, 2, 3, 4  ->  v_tm1 = [1, 2, 3], v_t = [2, 3, 4] (bootstrap V(x_3) = 4)
#   r = [1, 1, 2], discount = [0.5, 0.5, 0.5], rho = pi/mu = [2, 0.5, 1.5]
#   unclipped TD errors r_s + d_s V(x_{s+1}) - V(x_s):
#     s=0: 1 + 0.5*2 - 1 = 1.0;  s=1: 1 + 0.5*3 - 2 = 0.5;  s=2: 2 + 0.5*4 - 3 = 1.0
# ---------------------------------------------------------------------------------------------
V_TM1 = np.array([1.0, 2.0, 3.0], np.float32)
V_T = np.array([2.0, 3.0, 4.0], np.float32)
R_T = np.array([1.0, 1.0, 2.0], np.float32)
DISCOUNT_T = np.array([0.5, 0.5, 0.5], np.float32)
RHO_TM1 = np.array([2.0, 0.5, 1.5], np.float32)


def _hand_case(fn):
    return fn(V_TM1, V_T, R_T, DISCOUNT_T, RHO_TM1)


@pytest.mark.parametrize("jit", [False, True])
def test_hand_computed_default_thresholds(jit: bool) -> None:
    # rho_bar = c_bar = pg_bar = 1, lambda = 1:
    #   clipped rho = [1, 0.5, 1] (rho_0 = 2 and rho_2 = 1.5 clipped), c = [1, 0.5, 1] (c_0 clipped)
    #   delta = clipped rho * td = [1.0, 0.25, 1.0]
    #   a_2 = 1.0
    #   a_1 = 0.25 + d_1 c_1 a_2 = 0.25 + 0.5*0.5*1.0 = 0.5
    #   a_0 = 1.0  + d_0 c_0 a_1 = 1.0  + 0.5*1.0*0.5 = 1.25
    #   v_s = V(x_s) + a_s = [2.25, 2.5, 4.0]
    #   q_s = r_s + d_s v_{s+1}: q_0 = 1 + 0.5*2.5 = 2.25, q_1 = 1 + 0.5*4.0 = 3.0,
    #                            q_2 = 2 + 0.5*4 (bootstrap) = 4.0
    #   pg_s = min(1, rho_s) (q_s - V(x_s)) = [1*(2.25-1), 0.5*(3-2), 1*(4-3)] = [1.25, 0.5, 1.0]
    fn = jax.jit(vtrace) if jit else vtrace
    out = _hand_case(fn)
    np.testing.assert_allclose(out.errors + V_TM1, [2.25, 2.5, 4.0], rtol=1e-6)
    np.testing.assert_allclose(out.errors, [1.25, 0.5, 1.0], rtol=1e-6)
    np.testing.assert_allclose(out.q_estimate, [2.25, 3.0, 4.0], rtol=1e-6)
    np.testing.assert_allclose(out.pg_advantage, [1.25, 0.5, 1.0], rtol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_hand_computed_other_thresholds(jit: bool) -> None:
    # rho_bar = 3, c_bar = 1, pg_bar = 1.5, lambda = 1:
    #   clipped rho = [2, 0.5, 1.5] (none clipped),
    #   c = [1, 0.5, 1] (c_0 = min(1, 2), c_2 = min(1, 1.5)),
    #   pg rho = [1.5, 0.5, 1.5] (rho_0 = 2 clipped to 1.5)
    #   delta = [2*1.0, 0.5*0.5, 1.5*1.0] = [2.0, 0.25, 1.5]
    #   a_2 = 1.5
    #   a_1 = 0.25 + 0.5*0.5*1.5 = 0.625
    #   a_0 = 2.0  + 0.5*1.0*0.625 = 2.3125
    #   v_s = [1 + 2.3125, 2 + 0.625, 3 + 1.5] = [3.3125, 2.625, 4.5]
    #   q_0 = 1 + 0.5*2.625 = 2.3125, q_1 = 1 + 0.5*4.5 = 3.25, q_2 = 2 + 0.5*4 = 4.0
    #   pg = [1.5*(2.3125-1), 0.5*(3.25-2), 1.5*(4-3)] = [1.96875, 0.625, 1.5]
    fn = functools.partial(
        vtrace, clip_rho_threshold=3.0, clip_c_threshold=1.0, clip_pg_rho_threshold=1.5
    )
    fn = jax.jit(fn) if jit else fn
    out = _hand_case(fn)
    np.testing.assert_allclose(out.errors + V_TM1, [3.3125, 2.625, 4.5], rtol=1e-6)
    np.testing.assert_allclose(out.q_estimate, [2.3125, 3.25, 4.0], rtol=1e-6)
    np.testing.assert_allclose(out.pg_advantage, [1.96875, 0.625, 1.5], rtol=1e-6)


def test_hand_computed_lambda() -> None:
    # Default thresholds, lambda = 0.5 (Remark 2): c = 0.5 * [1, 0.5, 1] = [0.5, 0.25, 0.5]
    #   delta = [1.0, 0.25, 1.0] as in the default case
    #   a_2 = 1.0
    #   a_1 = 0.25 + 0.5*0.25*1.0  = 0.375
    #   a_0 = 1.0  + 0.5*0.5*0.375 = 1.09375
    #   v_s = [2.09375, 2.375, 4.0]
    #   paper (q_s = r_s + d_s v_{s+1}):
    #     q_0 = 1 + 0.5*2.375 = 2.1875, q_1 = 1 + 0.5*4 = 3.0, q_2 = 4.0
    #   pg = [1*(2.1875-1), 0.5*(3-2), 1*(4-3)] = [1.1875, 0.5, 1.0]
    #   (rlax would use q_0 = 1 + 0.5*(0.5*2.375 + 0.5*3.0) = 2.34375.)
    out = vtrace(V_TM1, V_T, R_T, DISCOUNT_T, RHO_TM1, lambda_=0.5)
    np.testing.assert_allclose(out.errors + V_TM1, [2.09375, 2.375, 4.0], rtol=1e-6)
    np.testing.assert_allclose(out.q_estimate, [2.1875, 3.0, 4.0], rtol=1e-6)
    np.testing.assert_allclose(out.pg_advantage, [1.1875, 0.5, 1.0], rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Literal references in float64 numpy.
# ---------------------------------------------------------------------------------------------
def _random_trace(seed: int, t: int = 9, terminal_prob: float = 0.3):
    rng = np.random.default_rng(seed)
    v_all = rng.normal(size=t + 1)
    discount = 0.9 * (rng.random(t) > terminal_prob)
    return dict(
        v_tm1=v_all[:-1].astype(np.float32),
        v_t=v_all[1:].astype(np.float32),
        r_t=rng.normal(size=t).astype(np.float32),
        discount_t=discount.astype(np.float32),
        rho_tm1=np.exp(rng.normal(scale=1.0, size=t)).astype(np.float32),
    )


def _double_sum_vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, lam, rho_bar, c_bar, pg_bar):
    """Eq. (1) written out: v_s = V(x_s) + sum_t (prod_{k<t} d_k)(prod_{i<t} c_i) delta_t."""
    v_tm1, v_t, r_t, d, rho = (
        np.asarray(x, np.float64) for x in (v_tm1, v_t, r_t, discount_t, rho_tm1)
    )
    n = len(r_t)
    delta = [min(rho_bar, rho[t]) * (r_t[t] + d[t] * v_t[t] - v_tm1[t]) for t in range(n)]
    c = [lam * min(c_bar, rho[i]) for i in range(n)]
    vs = np.zeros(n)
    for s in range(n):
        total = v_tm1[s]
        for t in range(s, n):
            weight = 1.0
            for i in range(s, t):
                weight *= d[i] * c[i]
            total += weight * delta[t]
        vs[s] = total
    vs_tp1 = np.append(vs[1:], v_t[-1])
    q = r_t + d * vs_tp1
    pg = np.minimum(pg_bar, rho) * (q - v_tm1)
    return vs, pg, q


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam", [1.0, 0.7])
def test_scan_equals_double_sum(seed: int, lam: float) -> None:
    trace = _random_trace(seed)
    thresholds = dict(clip_rho_threshold=3.7, clip_c_threshold=1.0, clip_pg_rho_threshold=2.2)
    out = jax.jit(functools.partial(vtrace, lambda_=lam, **thresholds))(**trace)
    vs, pg, q = _double_sum_vtrace(**trace, lam=lam, rho_bar=3.7, c_bar=1.0, pg_bar=2.2)
    np.testing.assert_allclose(out.errors + trace["v_tm1"], vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.pg_advantage, pg, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.q_estimate, q, rtol=1e-5, atol=1e-5)


def test_remark1_recursion_holds() -> None:
    # v_s = V(x_s) + delta_s + d_s c_s (v_{s+1} - V(x_{s+1})), default thresholds.
    tr = _random_trace(11)
    vs = np.asarray(vtrace(**tr).errors) + tr["v_tm1"]
    vs_tp1 = np.append(vs[1:], tr["v_t"][-1])
    clipped = np.minimum(1.0, tr["rho_tm1"])
    delta = clipped * (tr["r_t"] + tr["discount_t"] * tr["v_t"] - tr["v_tm1"])
    rhs = tr["v_tm1"] + delta + tr["discount_t"] * clipped * (vs_tp1 - tr["v_t"])
    np.testing.assert_allclose(vs, rhs, rtol=1e-5, atol=1e-5)


def _n_step_return(r_t, discount_t, v_t, s: int, n: int) -> float:
    """sum_{k<n} (prod_{j<k} d_{s+j}) r_{s+k} + (prod_{j<n} d_{s+j}) V(x_{s+n})."""
    total, weight = 0.0, 1.0
    for k in range(n):
        total += weight * r_t[s + k]
        weight *= discount_t[s + k]
    return total + weight * v_t[s + n - 1]


def test_on_policy_equals_n_step_return() -> None:
    # Eq. (2): pi = mu, c_bar >= 1 -> v_s is the (T - s)-step return bootstrapped on V(x_T).
    tr = _random_trace(3, t=8)
    tr["rho_tm1"] = np.ones_like(tr["rho_tm1"])
    vs = np.asarray(vtrace(**tr).errors) + tr["v_tm1"]
    t = len(vs)
    expected = [_n_step_return(tr["r_t"], tr["discount_t"], tr["v_t"], s, t - s) for s in range(t)]
    np.testing.assert_allclose(vs, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lam", [0.0, 0.5, 0.9])
def test_on_policy_lambda_equals_lambda_return(lam: float) -> None:
    # G^lambda_s = (1 - lam) sum_{n=1}^{N-1} lam^{n-1} G^(n)_s + lam^{N-1} G^(N)_s, N = T - s.
    tr = _random_trace(5, t=8)
    tr["rho_tm1"] = np.ones_like(tr["rho_tm1"])
    vs = np.asarray(vtrace(**tr, lambda_=lam).errors) + tr["v_tm1"]
    t = len(vs)
    expected = []
    for s in range(t):
        big_n = t - s
        g = [
            _n_step_return(tr["r_t"], tr["discount_t"], tr["v_t"], s, n)
            for n in range(1, big_n + 1)
        ]
        mixed = (1 - lam) * sum(lam ** (n - 1) * g[n - 1] for n in range(1, big_n))
        expected.append(mixed + lam ** (big_n - 1) * g[-1])
    np.testing.assert_allclose(vs, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lam", [1.0, 0.6])
def test_episode_boundary_equals_two_episodes(lam: float) -> None:
    tr = _random_trace(7, t=8, terminal_prob=0.0)
    tr["discount_t"][3] = 0.0  # episode ends at step 3; step 4 starts a new one
    fn = functools.partial(vtrace, lambda_=lam, clip_rho_threshold=2.0, clip_pg_rho_threshold=1.5)
    whole = fn(**tr)
    first = fn(**{k: v[:4] for k, v in tr.items()})
    second = fn(**{k: v[4:] for k, v in tr.items()})
    for field in ("errors", "pg_advantage", "q_estimate"):
        joined = np.concatenate([getattr(first, field), getattr(second, field)])
        np.testing.assert_allclose(getattr(whole, field), joined, rtol=1e-6, atol=1e-6)


def test_jit_equals_eager() -> None:
    tr = _random_trace(13)
    fn = functools.partial(vtrace, lambda_=0.8, clip_rho_threshold=3.7, clip_pg_rho_threshold=2.2)
    eager, jitted = fn(**tr), jax.jit(fn)(**tr)
    for a, b in zip(eager, jitted):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_vmap_over_batch_axis_equals_per_column() -> None:
    traces = [_random_trace(100 + b, t=6) for b in range(5)]
    batched = {k: np.stack([tr[k] for tr in traces], axis=1) for k in traces[0]}  # [T, B]
    fn = functools.partial(vtrace, lambda_=0.9, clip_rho_threshold=3.7, clip_pg_rho_threshold=2.2)
    out = jax.jit(jax.vmap(fn, in_axes=1, out_axes=1))(
        batched["v_tm1"], batched["v_t"], batched["r_t"], batched["discount_t"], batched["rho_tm1"]
    )
    assert out.errors.shape == (6, 5)
    for b, tr in enumerate(traces):
        column = fn(**tr)
        for field in ("errors", "pg_advantage", "q_estimate"):
            np.testing.assert_allclose(
                getattr(out, field)[:, b], getattr(column, field), rtol=1e-6, atol=1e-6
            )


def test_stop_gradient_on_targets() -> None:
    tr = {k: jnp.asarray(v) for k, v in _random_trace(17).items()}
    names = ("v_tm1", "v_t", "r_t", "discount_t", "rho_tm1")
    argnums = tuple(range(len(names)))

    def reduce(field):
        return lambda *args: jnp.sum(getattr(vtrace(*args, lambda_=0.9), field))

    args = tuple(tr[n] for n in names)
    # errors = stop_gradient(v_s) - V(x_s): d/dv_tm1 = -1 exactly, nothing else.
    grads = jax.grad(reduce("errors"), argnums=argnums)(*args)
    np.testing.assert_array_equal(grads[0], -np.ones_like(tr["v_tm1"]))
    for g in grads[1:]:
        np.testing.assert_array_equal(g, np.zeros_like(g))
    for field in ("pg_advantage", "q_estimate"):
        for g in jax.grad(reduce(field), argnums=argnums)(*args):
            np.testing.assert_array_equal(g, np.zeros_like(g))


# ---------------------------------------------------------------------------------------------
# Cross-checks against rlax 0.1.9 (which hard-codes c_bar = 1).
# ---------------------------------------------------------------------------------------------
def _rlax(tr, lam, rho_bar=1.0, pg_bar=1.0):
    return rlax.vtrace_td_error_and_advantage(
        tr["v_tm1"], tr["v_t"], tr["r_t"], tr["discount_t"], tr["rho_tm1"],
        lambda_=lam, clip_rho_threshold=rho_bar, clip_pg_rho_threshold=pg_bar,
    )


@pytest.mark.parametrize("seed", range(3))
def test_matches_rlax_for_lambda_one(seed: int) -> None:
    tr = _random_trace(200 + seed)
    ours = vtrace(**tr, clip_rho_threshold=3.7, clip_pg_rho_threshold=2.2)
    theirs = _rlax(tr, 1.0, rho_bar=3.7, pg_bar=2.2)
    for field in ("errors", "pg_advantage", "q_estimate"):
        np.testing.assert_allclose(
            getattr(ours, field), getattr(theirs, field), rtol=1e-6, atol=1e-6
        )


def test_documented_difference_from_rlax_for_lambda_below_one() -> None:
    lam = 0.8
    tr = _random_trace(300, terminal_prob=0.1)
    tr["rho_tm1"] = np.full_like(tr["rho_tm1"], 0.9)  # non-trivial, unclipped traces
    ours = vtrace(**tr, lambda_=lam)
    theirs = _rlax(tr, lam)
    # Same value targets v_s ...
    np.testing.assert_allclose(ours.errors, theirs.errors, rtol=1e-5, atol=1e-5)
    # ... but rlax bootstraps q on lam v_{s+1} + (1 - lam) V(x_{s+1}), the paper on v_{s+1}.
    vs = np.asarray(ours.errors) + tr["v_tm1"]
    vs_tp1 = np.append(vs[1:], tr["v_t"][-1])
    q_rlax_formula = tr["r_t"] + tr["discount_t"] * np.append(
        lam * vs_tp1[:-1] + (1 - lam) * tr["v_t"][:-1], tr["v_t"][-1]
    )
    np.testing.assert_allclose(theirs.q_estimate, q_rlax_formula, rtol=1e-5, atol=1e-5)
    q_paper = tr["r_t"] + tr["discount_t"] * vs_tp1
    np.testing.assert_allclose(ours.q_estimate, q_paper, rtol=1e-5, atol=1e-5)
    assert np.max(np.abs(np.asarray(ours.pg_advantage) - np.asarray(theirs.pg_advantage))) > 1e-2


def test_rlax_published_vectors() -> None:
    # rlax/_src/vtrace_test.py, 2 x 4 batch-major example. Its clip_pg_rho_threshold = 5.0 is
    # defined but never passed, so the expected values are for the default pg clip of 1.0.
    behaviour_logits = np.array(
        [[[8.9, 0.7], [5.0, 1.0], [0.6, 0.1], [-0.9, -0.1]],
         [[0.3, -5.0], [1.0, -8.0], [0.3, 1.7], [4.7, 3.3]]], np.float32)
    target_logits = np.array(
        [[[0.4, 0.5], [9.2, 8.8], [0.7, 4.4], [7.9, 1.4]],
         [[1.0, 0.9], [1.0, -1.0], [-4.3, 8.7], [0.8, 0.3]]], np.float32)
    actions = np.array([[0, 1, 0, 0], [1, 0, 0, 1]], np.int32)
    rewards = np.array([[-1.3, -1.3, 2.3, 42.0], [1.3, 5.3, -3.3, -5.0]], np.float32)
    discounts = np.array([[0.0, 0.89, 0.85, 0.99], [0.88, 1.0, 0.83, 0.95]], np.float32)
    values = np.array([[2.1, 1.1, -3.1, 0.0], [3.1, 0.1, -1.1, 7.4]], np.float32)
    bootstrap = np.array([8.4, -1.2], np.float32)
    expected_td = np.array(
        [[-1.6155143, -3.4973226, 1.8670533, 5.0316002e1],
         [1.4662437, 3.6116405, -8.3327293e-5, -1.3540000e1]], np.float32)
    expected_pg = np.array(
        [[-1.6155143, -3.4973226, 1.8670534, 5.0316002e1],
         [1.4662433, 3.6116405, -8.3369283e-05, -1.3540000e1]], np.float32)

    log_pi = jax.vmap(log_prob)(target_logits, actions)
    log_mu = jax.vmap(log_prob)(behaviour_logits, actions)
    log_rho = log_pi - log_mu
    rho = np.exp(log_rho)
    v_t = np.concatenate([values[:, 1:], bootstrap[:, None]], axis=1)
    out = jax.jit(jax.vmap(vtrace))(values, v_t, rewards, discounts, rho)
    np.testing.assert_allclose(out.errors, expected_td, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.pg_advantage, expected_pg, rtol=1e-5, atol=1e-6)
