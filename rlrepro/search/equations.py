"""Programs as readable, simplified equations (sympy), in the paper's notation.

Q = Q_theta(s_t, a_t); M = max_a Q_target(s_{t+1}, a); gamma = gamma_t (0 at terminals); r = r_t. Scalar
operators become sympy expressions (L2Distance(x, y) = (x - y)^2 / 2, as the released graphs); operators
over lists and states stay as named functions. The printed form substitutes Y = r + gamma M.
"""

from __future__ import annotations

import sympy as sp

from rlrepro.search.ops import INPUTS
from rlrepro.search.program import Program

_Q, _M, _R, _G, _Y = sp.symbols("Q M r gamma Y")


def _expr(program: Program, j: int, memo: dict[int, object]) -> object:
    if j in memo:
        return memo[j]
    n_inputs = len(INPUTS)
    if j < n_inputs:
        name = INPUTS[j][0]
        value = {"r_t": _R, "discount_t": _G}.get(name, sp.Symbol(name))
    elif j < program.num_inputs:
        value = sp.nsimplify(program.constants[j - n_inputs])
    else:
        value = _node_expr(program, j, memo)
    memo[j] = value
    return value


def _node_expr(program: Program, j: int, memo: dict[int, object]) -> object:
    node = program.nodes[j - program.num_inputs]
    args = [_expr(program, i, memo) for i in node.inputs]
    names = [str(a) for a in args]
    op = node.op
    if op == "QValues":
        return sp.Symbol(f"Q({names[0]},.)")
    if op == "TargetQValues":
        return sp.Symbol(f"Qtarg({names[0]},.)")
    if op == "SelectList" and names == ["Q(s_tm1,.)", "a_tm1"]:
        return _Q
    if op == "MaxList" and names == ["Qtarg(s_t,.)"]:
        return _M
    scalar = {
        "Add": lambda a, b: a + b,
        "Subtract": lambda a, b: a - b,
        "Max": sp.Max,
        "Min": sp.Min,
        "Div": lambda a, b: a / b,
        "DotProduct": lambda a, b: a * b,
        "L2Distance": lambda a, b: (a - b) ** 2 / 2,
        "Log": lambda a: sp.log(sp.Abs(a)),
        "Exp": sp.exp,
        "Abs": sp.Abs,
        "MultiplyTenth": lambda a: a / 10,
    }
    if op in scalar and all(isinstance(a, sp.Basic) for a in args):
        return scalar[op](*args)
    return sp.Function(op)(*args)


def equation(program: Program) -> str:
    """The program's output as a simplified expression, with Y = r + gamma M where that shortens it."""
    expr = _expr(program, program.output, {})
    try:
        simple = sp.simplify(expr) if sp.count_ops(expr) < 60 else expr
        in_y = sp.simplify(simple.subs(_R, _Y - _G * _M))
        best = min((simple, in_y), key=lambda e: len(str(e)))
    except Exception:  # sympy gives up on some piecewise forms: print them as they are
        best = expr
    return str(best).replace("Qtarg", "Q_targ")
