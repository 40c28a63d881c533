"""The interpreter's two dispatches: the fused evaluator equals the per-operator definitions, values and gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.search.interpreter import _branches, _fused, make_interpreter, transition_inputs
from rlrepro.search.ops import CONSTANTS, OPS
from rlrepro.search.program import dqnreg_program, encode
from tests.search.test_program import _batch

WIDTH, ACTIONS, BATCH = 5, 3, 8


def _operands(seed: int):
    """Random x, y [B, W] (with exact zeros, tiny divisors, ties and an action index in y's first column), masks."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, WIDTH)) * 3
    y = rng.normal(size=(BATCH, WIDTH)) * 3
    x[0, :2], y[1, :] = 0.0, 1e-8  # log|0|, division by a tiny number
    y[:, 0] = rng.integers(0, ACTIONS, BATCH)  # SelectList reads the action from the first column
    x[2] = y[2]  # ties of Max and Min (the gradient is split evenly)
    x[3, :ACTIONS] = 1.5  # ties of MaxList and MinList
    mx = np.arange(WIDTH) < rng.integers(1, WIDTH + 1)
    my = np.arange(WIDTH) < rng.integers(1, WIDTH + 1)
    n, u = rng.normal(size=BATCH), rng.uniform(size=BATCH)
    return tuple(jnp.asarray(v, jnp.float32) if v.dtype != bool else jnp.asarray(v) for v in (x, y, mx, my, n, u))


@pytest.mark.parametrize("op", range(len(OPS)), ids=[o.name for o in OPS])
def test_fused_dispatch_equals_the_operator_definition(op: int) -> None:
    reference, fused = _branches(ACTIONS, WIDTH)[op], _fused(ACTIONS, WIDTH)
    for seed in range(3):
        x, y, mx, my, n, u = _operands(seed)
        np.testing.assert_allclose(fused(op, x, y, mx, my, n, u), reference(x, y, mx, my, n, u), rtol=1e-5, atol=1e-6)
        weights = jax.random.normal(jax.random.key(seed), (BATCH, WIDTH))  # a random cotangent

        def grads(f):
            return jax.grad(lambda a, b: jnp.sum(weights * f(a, b)), argnums=(0, 1))(x, y)

        got = grads(lambda a, b: fused(op, a, b, mx, my, n, u))
        want = grads(lambda a, b: reference(a, b, mx, my, n, u))
        for g, w in zip(got, want):
            assert np.all(np.isfinite(g))
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_the_two_dispatches_give_the_same_loss_and_gradient() -> None:
    arrays, calls = encode(dqnreg_program())
    def apply(params, obs):  # a one-parameter "network": enough to carry a gradient
        return obs[:, :2] * params

    batch = _batch()
    inputs = transition_inputs(batch, CONSTANTS, 4, 2)
    key = jax.random.key(0)
    results = []
    for dispatch in ("fused", "switch"):
        run = make_interpreter(apply, 4, 2, calls, dispatch=dispatch)
        loss = lambda p: jnp.mean(run(p, 0.5 * p, inputs, arrays, key))  # noqa: E731
        results.append(jax.jit(jax.value_and_grad(loss))(jnp.float32(1.3)))  # eager, the switch compiles op by op
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5)


def test_unknown_dispatch_is_refused() -> None:
    with pytest.raises(ValueError, match="expected fused or switch"):
        make_interpreter(lambda p, o: o, 4, 2, dispatch="select")


def _exp_program(nested: bool):
    """L2Distance(Exp(r), 0.5) or L2Distance(Exp(Exp(r)), 0.5) on top of Q(s, a) (so the program is valid):
    the square of an Exp value, with the reward as large as a program's intermediate values get."""
    from rlrepro.search.program import Node, Program

    n_in = 5 + len(CONSTANTS)
    nodes = [Node("QValues", (0,)), Node("SelectList", (n_in, 1)), Node("Exp", (2,))]
    if nested:
        nodes.append(Node("Exp", (n_in + 2,)))
    nodes += [Node("L2Distance", (n_in + len(nodes) - 1, 6)), Node("Add", (n_in + len(nodes), n_in + 1))]
    return Program(tuple(nodes), output=n_in + len(nodes) - 1)


@pytest.mark.parametrize("dispatch", ["fused", "switch"])
@pytest.mark.parametrize("nested", [False, True], ids=["exp", "exp_exp"])
def test_exp_is_bounded_at_1e10_so_squares_and_exp_of_exp_stay_finite(dispatch: str, nested: bool) -> None:
    """Released ExpOpNode: clip(exp(x), -1e10, 1e10). With r = 100 (or Exp(Exp(r)) for any r >= 3.2), exp is
    capped at 1e10 and L2Distance(1e10, 0.5) = 0.5 (1e10 - 0.5)^2 = 5e19 (float32: 5.0e19, finite; the old cap
    exp(80) = 5.5e34 squared to inf). Below the cap Exp is exact: exp(2) = 7.389, 0.5 (7.389 - 0.5)^2 = 23.73."""
    arrays, calls = encode(_exp_program(nested))

    def apply(params, obs):
        return obs[:, :2] * params

    batch = _batch()
    run = make_interpreter(apply, 4, 2, calls, dispatch=dispatch)
    # One compiled program for both rewards (run eagerly, the switch dispatch compiled op by op: ~50 s a case).
    value_and_grad = jax.jit(jax.value_and_grad(lambda p, inputs: jnp.mean(run(p, p, inputs, arrays, jax.random.key(0)))))
    for reward, want in ((100.0, 0.5 * (1e10 - 0.5) ** 2), (2.0, None)):
        b = batch._replace(r_t=jnp.full_like(batch.r_t, reward))
        value, grad = value_and_grad(jnp.float32(1.3), transition_inputs(b, CONSTANTS, 4, 2))
        assert np.isfinite(value) and np.isfinite(grad)
        q = np.asarray(b.obs_tm1)[np.arange(len(b.a_tm1)), np.asarray(b.a_tm1)] * 1.3
        if want is None:
            inner = np.exp(np.exp(2.0)) if nested else np.exp(2.0)
            want = 0.5 * (min(inner, 1e10) - 0.5) ** 2
        np.testing.assert_allclose(value, want + q.mean(), rtol=1e-5)
