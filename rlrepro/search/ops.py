"""The search language of Evolving RL (App. A): value types and typed operators.

Types: ``S`` state, ``R`` float, ``Z`` action (discrete), ``L`` list of floats (one per action), ``P``
probabilities over actions. The vector type V and the extra networks NN:S->R, NN:S->V are left out: every
program here has only the Q-network and its target as parameters (the DQN family of §4.2-4.3).
Inside the interpreter every value is a [batch, W] array: an R or Z value repeats its number in every
column (so R + S broadcasts as in App. A); S uses the first obs_dim columns, L and P the first
num_actions; the rest is kept at zero.
"""

from __future__ import annotations

import dataclasses

S, R, Z, L, P = "S", "R", "Z", "L", "P"
TYPES: tuple[str, ...] = (S, R, Z, L, P)


@dataclasses.dataclass(frozen=True)
class Op:
    """One operator: its name, the input-type signatures it accepts and the output type of each."""

    name: str
    signatures: tuple[tuple[tuple[str, ...], str], ...]  # ((input types), output type)
    symbol: str  # how equations print it

    def output(self, input_types: tuple[str, ...]) -> str | None:
        for ins, out in self.signatures:
            if ins == input_types:
                return out
        return None


_ELEMENTWISE2 = (((R, R), R), ((S, S), S), ((R, S), S), ((S, R), S))
_UNARY = (((R,), R), ((S,), S))
_REDUCE2 = (((R, R), R), ((S, S), R))

# Index 0 is the no-op of unused interpreter slots; the order fixes the opcodes of the compiled interpreter.
OPS: tuple[Op, ...] = (
    Op("Noop", (), "noop"),
    Op("Add", _ELEMENTWISE2, "+"),
    Op("Subtract", _ELEMENTWISE2, "-"),
    Op("Max", _ELEMENTWISE2, "max"),
    Op("Min", _ELEMENTWISE2, "min"),
    Op("Div", _ELEMENTWISE2, "/"),
    Op("DotProduct", _REDUCE2, "dot"),
    Op("L2Distance", _REDUCE2, "l2"),
    Op("MaxList", (((L,), R),), "maxlist"),
    Op("MinList", (((L,), R),), "minlist"),
    Op("ArgMaxList", (((L,), Z),), "argmax"),
    Op("SelectList", (((L, Z), R),), "select"),
    Op("MeanList", (((L,), R),), "meanlist"),
    Op("VarianceList", (((L,), R),), "stdlist"),
    Op("Log", _UNARY, "log"),
    Op("Exp", _UNARY, "exp"),
    Op("Abs", _UNARY, "abs"),
    Op("QValues", (((S,), L),), "Q_theta"),
    Op("TargetQValues", (((S,), L),), "Q_target"),
    Op("Softmax", (((L,), P),), "softmax"),
    Op("KLDiv", (((P, P), R),), "kl"),
    Op("Entropy", (((P,), R),), "entropy"),
    Op("MultiplyTenth", _UNARY, "0.1*"),
    Op("Normal", (((), R),), "normal"),
    Op("Uniform", (((), R),), "uniform"),
)
OPCODE: dict[str, int] = {op.name: i for i, op in enumerate(OPS)}
SEARCHABLE: tuple[str, ...] = tuple(op.name for op in OPS[1:])

# Input nodes (released code `pre_graph_7`): transition elements and constants. The parameter nodes theta and
# theta' are folded into the two network operators (QValues uses theta, TargetQValues theta').
INPUTS: tuple[tuple[str, str], ...] = (
    ("s_tm1", S),
    ("a_tm1", Z),
    ("r_t", R),
    ("discount_t", R),  # gamma * (1 - terminal_t)
    ("s_t", S),
)
CONSTANTS: tuple[float, ...] = (1.0, 0.5, 0.2, 0.1, 0.01)  # App. A
