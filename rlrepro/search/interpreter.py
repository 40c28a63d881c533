"""One compiled interpreter for every loss program: ``lax.switch`` over opcodes, programs as arrays.

``make_program_loss(apply, obs_dim, num_actions, constants, net_calls)`` returns ``loss(params,
target_params, batch, program)`` with the program's ``ProgramArrays`` as a runtime argument: a new program
with the same slot count (``program.bucket``) and network-call pattern reuses the compiled update.
The network operators are hoisted out of the switch: they read only the input states (s_tm1 or s_t), so
the up-to-four calls Q_theta / Q_target of s_tm1 / s_t are computed once, before the slots, and only those
the program uses (``net_calls``, static). Inside ``lax.switch`` a network branch would make every slot
carry the network's residuals in the backward pass (3-4x slower on CPU). Values are [batch, W] arrays (see ``ops``); after every
operator the columns outside the value's type are zeroed, so padding never feeds NaN into gradients.
Released-code semantics (notes §4 item 8): Log is log(|x| + 1e-12), VarianceList is the standard deviation,
Entropy is sum p log p; Div guards |y| < 1e-6.

Two dispatches compute the same values. ``switch`` runs one function per operator (``_branches``, the
readable definition) under ``lax.switch``. ``fused`` (the default) computes every operator's value for the
slot at once, sharing the reductions (one sum over the columns for DotProduct, L2Distance, SelectList,
MeanList, KLDiv and Entropy, one max for MaxList, MinList and Softmax, one more sum for VarianceList and
Softmax), and picks the opcode's value with ``lax.select_n``. XLA fuses that into a few loops per slot
instead of dozens of tiny kernels, which is what an update of small batches costs on CPU. Every operator
is finite-gradient on any finite input (logs of |x|, Div's guard, Exp bounded at 1e10, Softmax's exponent <= 0),
so the values not selected never turn the selected one's gradient into NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from rlrepro.search.ops import OPCODE, OPS
from rlrepro.search.program import ProgramArrays

Apply = Callable[[Any, jax.Array], jax.Array]

# Exp is bounded at 1e10, as the released code's ``ExpOpNode`` (``clip_by_value(exp(x), -1e10, 1e10)``), so a
# square of it (1e20) and Exp(Exp(x)) stay finite in float32 (max 3.4e38); a cap of exp(80) = 5.5e34 overflowed
# once squared. Written as exp(min(x, log 1e10)): the same values, and a zero (not NaN) gradient above the cap.
EXP_CAP = 1e10
EXP_LOG_CAP = math.log(EXP_CAP)


def _rep(v: jax.Array, width: int) -> jax.Array:
    """A per-example number [B] repeated in every column: the R representation."""
    return jnp.broadcast_to(v[:, None], (v.shape[0], width))


def _branches(num_actions: int, width: int) -> list[Callable]:
    """One function per opcode: (x, y, reduce mask x, reduce mask y, normal [B], uniform [B]) -> [B, W]."""
    la = jnp.arange(width) < num_actions  # list columns
    neg = -1e30

    def reduce_sum(v, m):
        return jnp.sum(jnp.where(m, v, 0.0), axis=-1)

    def lst(f):
        return lambda x, y, *_: f(x)

    def softmax(x):
        return jnp.where(la, jax.nn.softmax(jnp.where(la, x, neg), axis=-1), 0.0)

    def safe_div(x, y):
        return x / jnp.where(jnp.abs(y) < 1e-6, jnp.where(y < 0, -1e-6, 1e-6), y)

    table = {
        "Noop": lambda x, y, *_: jnp.zeros_like(x),
        "Add": lambda x, y, *_: x + y,
        "Subtract": lambda x, y, *_: x - y,
        "Max": lambda x, y, *_: jnp.maximum(x, y),
        "Min": lambda x, y, *_: jnp.minimum(x, y),
        "Div": lambda x, y, *_: safe_div(x, y),
        "DotProduct": lambda x, y, mx, my, *_: _rep(reduce_sum(x * y, mx), width),
        "L2Distance": lambda x, y, mx, my, *_: _rep(0.5 * reduce_sum((x - y) ** 2, mx), width),
        "MaxList": lst(lambda x: _rep(jnp.max(jnp.where(la, x, neg), axis=-1), width)),
        "MinList": lst(lambda x: _rep(-jnp.max(jnp.where(la, -x, neg), axis=-1), width)),
        "ArgMaxList": lst(lambda x: _rep(jnp.argmax(jnp.where(la, x, neg), axis=-1).astype(x.dtype), width)),
        "SelectList": lambda x, y, *_: _rep(
            jnp.sum(jnp.where(jnp.arange(width)[None] == jnp.round(y[:, :1]).astype(jnp.int32), x, 0.0), -1), width
        ),
        "MeanList": lst(lambda x: _rep(jnp.sum(jnp.where(la, x, 0.0), -1) / num_actions, width)),
        "VarianceList": lst(
            lambda x: _rep(jnp.sqrt(jnp.sum(jnp.where(la, (x - jnp.sum(jnp.where(la, x, 0.0), -1, keepdims=True)
                                                           / num_actions) ** 2, 0.0), -1) / num_actions + 1e-12), width)
        ),
        "Log": lst(lambda x: jnp.log(jnp.abs(x) + 1e-12)),
        "Exp": lst(lambda x: jnp.exp(jnp.minimum(x, EXP_LOG_CAP))),
        "Abs": lst(jnp.abs),
        "QValues": lambda x, y, *_: jnp.zeros_like(x),  # hoisted: never dispatched
        "TargetQValues": lambda x, y, *_: jnp.zeros_like(x),
        "Softmax": lst(softmax),
        "KLDiv": lambda x, y, *_: _rep(
            jnp.sum(jnp.where(la, x * (jnp.log(jnp.abs(x) + 1e-12) - jnp.log(jnp.abs(y) + 1e-12)), 0.0), -1), width
        ),
        "Entropy": lst(lambda x: _rep(jnp.sum(jnp.where(la, x * jnp.log(jnp.abs(x) + 1e-12), 0.0), -1), width)),
        "MultiplyTenth": lst(lambda x: 0.1 * x),
        "Normal": lambda x, y, mx, my, n, u: _rep(n, width),
        "Uniform": lambda x, y, mx, my, n, u: _rep(u, width),
    }
    return [table[op.name] for op in OPS]


def _fused(num_actions: int, width: int) -> Callable:
    """``slot(op, x, y, mx, my, n, u) -> [B, W]``: every operator's value from shared reductions, ``op``'s picked.

    The backward pass is written out the same way (``jax.custom_vjp``): every operator's input cotangents
    from two shared sums of the output cotangent, then ``op``'s picked; autodiff of the forward would
    differentiate all 25 values and cost about twice the kernels. Same values and gradients as
    ``_branches`` (tested operator by operator; ties split the gradient evenly, as JAX's max and min do)."""
    la = jnp.arange(width) < num_actions  # list columns
    cols = jnp.arange(width)
    neg, eps = -1e30, 1e-12

    def rep(v):
        return _rep(v, width)

    def elementwise(x, y):
        """Parts both passes use: log|x|, log|y|, SelectList's chosen column, Div's guarded divisor."""
        chosen = cols[None] == jnp.round(y[:, :1]).astype(jnp.int32)
        safe_y = jnp.where(jnp.abs(y) < 1e-6, jnp.where(y < 0, -1e-6, 1e-6), y)
        return jnp.log(jnp.abs(x) + eps), jnp.log(jnp.abs(y) + eps), chosen, safe_y

    def forward(op, x, y, mx, my, n, u):
        log_x, log_y, chosen, safe_y = elementwise(x, y)
        dot, l2, select, total, kl, entropy = jnp.sum(jnp.stack([
            jnp.where(mx, x * y, 0.0), jnp.where(mx, (x - y) ** 2, 0.0), jnp.where(chosen, x, 0.0),
            jnp.where(la, x, 0.0), jnp.where(la, x * (log_x - log_y), 0.0), jnp.where(la, x * log_x, 0.0),
        ]), axis=-1)
        masked = jnp.where(la, x, neg)
        top, neg_bottom = jnp.max(jnp.stack([masked, jnp.where(la, -x, neg)]), axis=-1)
        mean = total / num_actions
        exp_shifted = jnp.exp(jnp.where(la, x, top[:, None]) - top[:, None])  # <= 1 on the list columns
        is_top, is_bottom = la & (x == top[:, None]), la & (x == -neg_bottom[:, None])
        sq_dev, dev, exp_sum, tops, bottoms = jnp.sum(jnp.stack([
            jnp.where(la, (x - mean[:, None]) ** 2, 0.0), jnp.where(la, x - mean[:, None], 0.0),
            jnp.where(la, exp_shifted, 0.0), is_top.astype(x.dtype), is_bottom.astype(x.dtype),
        ]), axis=-1)
        std = jnp.sqrt(sq_dev / num_actions + eps)
        softmax = jnp.where(la, exp_shifted / exp_sum[:, None], 0.0)
        zeros = jnp.zeros_like(x)
        values = {
            "Noop": zeros, "Add": x + y, "Subtract": x - y, "Max": jnp.maximum(x, y), "Min": jnp.minimum(x, y),
            "Div": x / safe_y, "DotProduct": rep(dot), "L2Distance": rep(0.5 * l2), "MaxList": rep(top),
            "MinList": rep(-neg_bottom), "ArgMaxList": rep(jnp.argmax(masked, axis=-1).astype(x.dtype)),
            "SelectList": rep(select), "MeanList": rep(mean), "VarianceList": rep(std), "Log": log_x,
            "Exp": jnp.exp(jnp.minimum(x, EXP_LOG_CAP)), "Abs": jnp.abs(x), "QValues": zeros, "TargetQValues": zeros,
            "Softmax": softmax, "KLDiv": rep(kl), "Entropy": rep(entropy), "MultiplyTenth": 0.1 * x,
            "Normal": rep(n), "Uniform": rep(u),
        }
        out = jax.lax.select_n(op, *(values[o.name] for o in OPS))
        # Only the inputs and the per-example reductions are kept; the backward recomputes the elementwise
        # parts inside its own loops (keeping them would write them out: more kernels, not fewer).
        return out, (op, x, y, mx, jnp.stack([top, neg_bottom, total, sq_dev, dev, exp_sum, tops, bottoms]))

    def backward(saved, g):
        op, x, y, mx, reductions = saved
        top, neg_bottom, total, sq_dev, dev, exp_sum, tops, bottoms = (r[:, None] for r in reductions)
        mean, std = total / num_actions, jnp.sqrt(sq_dev / num_actions + eps)
        softmax = jnp.where(la, jnp.exp(jnp.where(la, x, top) - top) / exp_sum, 0.0)
        top_share = jnp.where(la & (x == top), 1.0 / tops, 0.0)  # ties share the gradient evenly
        bottom_share = jnp.where(la & (x == -neg_bottom), 1.0 / bottoms, 0.0)
        log_x, log_y, chosen, safe_y = elementwise(x, y)
        g_sum, g_dot_p = jnp.sum(jnp.stack([g, jnp.where(la, g * softmax, 0.0)]), axis=-1)
        big = g_sum[:, None]  # the cotangent of a per-example number repeated over the columns
        sign_x, sign_y = jnp.where(x >= 0, 1.0, -1.0), jnp.where(y >= 0, 1.0, -1.0)  # d|x|/dx, 1 at 0 as in JAX
        d_log_x, d_log_y = sign_x / (jnp.abs(x) + eps), sign_y / (jnp.abs(y) + eps)
        half_tie = jnp.where(x == y, 0.5, 0.0)
        below_cap = jnp.where(x < EXP_LOG_CAP, 1.0, jnp.where(x == EXP_LOG_CAP, 0.5, 0.0))  # d min(x, cap) / dx
        zeros = jnp.zeros_like(x)
        dx = {
            "Add": g, "Subtract": g, "Max": g * (jnp.where(x > y, 1.0, 0.0) + half_tie),
            "Min": g * (jnp.where(x < y, 1.0, 0.0) + half_tie), "Div": g / safe_y,
            "DotProduct": jnp.where(mx, big * y, 0.0), "L2Distance": jnp.where(mx, big * (x - y), 0.0),
            "MaxList": big * top_share, "MinList": big * bottom_share, "SelectList": jnp.where(chosen, big, 0.0),
            "MeanList": jnp.where(la, big / num_actions, 0.0),
            "VarianceList": jnp.where(la, big * ((x - mean) - dev / num_actions) / (num_actions * std), 0.0),
            "Log": g * d_log_x, "Exp": g * jnp.exp(jnp.minimum(x, EXP_LOG_CAP)) * below_cap, "Abs": g * sign_x,
            "Softmax": jnp.where(la, softmax * (g - g_dot_p[:, None]), 0.0),
            "KLDiv": jnp.where(la, big * (log_x - log_y + x * d_log_x), 0.0),
            "Entropy": jnp.where(la, big * (log_x + x * d_log_x), 0.0), "MultiplyTenth": 0.1 * g,
        }
        dy = {
            "Add": g, "Subtract": -g, "Max": g * (jnp.where(y > x, 1.0, 0.0) + half_tie),
            "Min": g * (jnp.where(y < x, 1.0, 0.0) + half_tie),
            "Div": jnp.where(jnp.abs(y) < 1e-6, 0.0, -g * x / safe_y**2),
            "DotProduct": jnp.where(mx, big * x, 0.0), "L2Distance": jnp.where(mx, big * (y - x), 0.0),
            "KLDiv": jnp.where(la, -big * x * d_log_y, 0.0),
        }
        pick = lambda d: jax.lax.select_n(op, *(d.get(o.name, zeros) for o in OPS))  # noqa: E731
        return None, pick(dx), pick(dy), None, None, None, None

    @jax.custom_vjp
    def slot(op, x, y, mx, my, n, u):
        return forward(op, x, y, mx, my, n, u)[0]

    slot.defvjp(forward, backward)
    return slot


def make_interpreter(
    apply: Apply, obs_dim: int, num_actions: int, net_calls: tuple[bool, ...] = (True,) * 4, dispatch: str = "fused"
) -> Callable:
    """``run(params, target_params, inputs [n_in, B, W], program, key) -> [B]`` per-example loss values."""
    width = max(obs_dim, num_actions, 1)
    if dispatch not in ("fused", "switch"):
        raise ValueError(f"unknown dispatch {dispatch!r}: expected fused or switch")
    branches = _branches(num_actions, width)
    fused = _fused(num_actions, width)
    cols = jnp.arange(width)

    def masks(kind: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Storage mask (which columns hold the value) and reduction mask (which columns count once)."""
        limit = jnp.where(kind == 0, obs_dim, jnp.where(kind == 1, width, num_actions))
        reduce_limit = jnp.where(kind == 1, 1, limit)
        return cols[None] < limit[:, None], cols[None] < reduce_limit[:, None]

    def run(params: Any, target_params: Any, inputs: jax.Array, program: ProgramArrays, key: jax.Array,
            dq: jax.Array | None = None) -> jax.Array:
        """Per-example values of the program's output; ``dq`` [B, A] is added to Q_theta(s_tm1) (for gradient probes)."""
        store, reduce = masks(program.kind)
        slots = program.op.shape[0]
        calls = []
        for c, used in enumerate(net_calls):  # Q_theta(s_tm1), Q_theta(s_t), Q_target(s_tm1), Q_target(s_t)
            state = inputs[0 if c % 2 == 0 else 4][:, :obs_dim]
            q = apply(params if c < 2 else target_params, state) if used else jnp.zeros((state.shape[0], num_actions))
            if c == 0 and dq is not None:
                q = q + dq
            calls.append(jnp.pad(q, ((0, 0), (0, width - num_actions))))
        n_in = inputs.shape[0] + 4
        has_noise = jnp.any((program.op == OPCODE["Normal"]) | (program.op == OPCODE["Uniform"]))
        noise_shape = (slots, inputs.shape[1])
        normal, uniform = jax.lax.cond(  # random numbers only when the program draws them
            has_noise,
            lambda k: (jax.random.normal(k, noise_shape), jax.random.uniform(jax.random.fold_in(k, 1), noise_shape)),
            lambda k: (jnp.zeros(noise_shape), jnp.zeros(noise_shape)),
            key,
        )
        table = jnp.concatenate([inputs, jnp.stack(calls), jnp.zeros((slots, *inputs.shape[1:]), inputs.dtype)])
        for i in range(slots):
            a, b = program.in0[i], program.in1[i]
            args = (table[a], table[b], reduce[a], reduce[b], normal[i], uniform[i])
            if dispatch == "switch":
                out = jax.lax.switch(program.op[i], branches, *args)
            else:
                out = fused(program.op[i], *args)
            table = table.at[n_in + i].set(jnp.where(store[n_in + i], out, 0.0))
        return table[program.output][:, 0]

    return run


def transition_inputs(batch: Any, constants: tuple[float, ...], obs_dim: int, num_actions: int) -> jax.Array:
    """The input-node table [n_in, B, W] of a batch: s_tm1, a_tm1, r_t, discount_t, s_t, then the constants."""
    width = max(obs_dim, num_actions, 1)
    n = batch.r_t.shape[0]

    def state(x):
        x = jnp.reshape(x, (n, -1)).astype(jnp.float32)
        return jnp.pad(x, ((0, 0), (0, width - x.shape[1])))

    rows = [
        state(batch.obs_tm1),
        _rep(batch.a_tm1.astype(jnp.float32), width),
        _rep(batch.r_t.astype(jnp.float32), width),
        _rep(batch.discount_t.astype(jnp.float32), width),
        state(batch.obs_t),
    ] + [jnp.full((n, width), c, jnp.float32) for c in constants]
    return jnp.stack(rows)


def make_program_loss(
    apply: Apply, obs_dim: int, num_actions: int, constants: tuple[float, ...], net_calls: tuple[bool, ...] = (True,) * 4,
    dispatch: str = "fused",
) -> Callable:
    """A DQN learner loss ``(params, target_params, batch, program) -> mean loss`` that runs ``program``.

    The key of the random operators (Normal, Uniform) is derived from the batch's bits, so it changes with
    every batch and stays deterministic.
    """
    run = make_interpreter(apply, obs_dim, num_actions, net_calls, dispatch)

    def loss(params: Any, target_params: Any, batch: Any, program: ProgramArrays) -> jax.Array:
        inputs = transition_inputs(batch, constants, obs_dim, num_actions)
        seed = jnp.sum(jax.lax.bitcast_convert_type(batch.r_t.astype(jnp.float32), jnp.uint32)) + jnp.sum(
            batch.a_tm1.astype(jnp.uint32)
        )
        key = jax.random.fold_in(jax.random.key(0), seed)
        return jnp.mean(run(params, target_params, inputs, program, key))

    return loss
