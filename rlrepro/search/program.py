"""Loss programs: typed DAGs over the operators of ``ops``, their validity, sampling, mutation and encoding.

A program is a list of operator nodes over a table whose first entries are the input nodes (``ops.INPUTS``
then the constants); node i of the program is table entry ``num_inputs + i``. ``output`` points at the
table entry whose value (an R, averaged over the batch) is the loss. Valid (§3.2): the output is an R and
depends on the online Q-network (a path to theta). Mutation (§3.3, released code): replace one non-frozen
node, or the output pointer, by a random operator whose inputs are drawn uniformly from the earlier nodes
of fitting types; a node that others use keeps its output type.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from rlrepro.search.ops import CONSTANTS, INPUTS, OPCODE, OPS, R, S, L, P, Z

KIND = {S: 0, R: 1, Z: 1, L: 2, P: 2}  # storage kind in the interpreter: state columns, repeated number, per action


@dataclasses.dataclass(frozen=True)
class Node:
    op: str
    inputs: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Program:
    """Operator nodes, the output pointer and how many leading nodes mutation leaves alone."""

    nodes: tuple[Node, ...]
    output: int
    frozen: int = 0
    constants: tuple[float, ...] = CONSTANTS

    @property
    def num_inputs(self) -> int:
        return len(INPUTS) + len(self.constants)

    def types(self) -> list[str]:
        """The type of every table entry (inputs, constants, nodes); raises on an ill-typed node."""
        types = [t for _, t in INPUTS] + [R] * len(self.constants)
        for i, node in enumerate(self.nodes):
            out = OPS[OPCODE[node.op]].output(tuple(types[j] for j in node.inputs))
            if out is None or any(j >= len(types) for j in node.inputs):
                raise ValueError(f"node {i} {node.op}{node.inputs}: inputs of types {[types[j] for j in node.inputs]}")
            types.append(out)
        return types

    def active(self) -> list[int]:
        """Table entries of the operator nodes the output depends on, in order."""
        needed, stack = set(), [self.output]
        while stack:
            j = stack.pop()
            if j >= self.num_inputs and j not in needed:
                needed.add(j)
                stack.extend(self.nodes[j - self.num_inputs].inputs)
        return sorted(needed)

    def is_valid(self) -> bool:
        try:
            types = self.types()
        except ValueError:
            return False
        if not (self.num_inputs <= self.output < len(types)) or types[self.output] != R:
            return False
        active = [self.nodes[j - self.num_inputs] for j in self.active()]
        if any(n.op in NETWORK_OPS and n.inputs[0] not in NETWORK_STATES for n in active):
            return False
        return any(n.op == "QValues" for n in active)


NETWORK_OPS = ("QValues", "TargetQValues")
NETWORK_STATES = (0, 4)  # the network operators read the input states s_tm1 or s_t (see ``interpreter``)


class ProgramArrays(NamedTuple):
    """A pruned program for the interpreter: slot i computes ``op[i]`` of table entries ``in0[i], in1[i]``.

    The table holds the inputs, then the four network calls Q_theta(s_tm1), Q_theta(s_t), Q_target(s_tm1),
    Q_target(s_t) (computed before the slots; ``net_calls`` says which ones the program uses), then the slots.
    ``kind`` [num_inputs + 4 + slots] gives each table entry's storage (0 state, 1 number, 2 per action);
    ``output`` is the table entry of the loss.
    """

    op: np.ndarray
    in0: np.ndarray
    in1: np.ndarray
    kind: np.ndarray
    output: np.ndarray


def network_call(node: Node) -> int:
    """Index 0..3 of a network node's call: 2 * (target network) + (reads s_t)."""
    return 2 * NETWORK_OPS.index(node.op) + NETWORK_STATES.index(node.inputs[0])


def bucket(num_active: int, step: int = 8) -> int:
    """Interpreter slots for a program: the active node count rounded up to a multiple of ``step``."""
    return max(step, -(-num_active // step) * step)


def encode(program: Program, slots: int | None = None) -> tuple[ProgramArrays, tuple[bool, ...]]:
    """The active nodes renumbered into ``slots`` interpreter slots (unused slots are no-ops), and which of the
    four network calls the program makes (the static part: one compiled interpreter per pattern and size)."""
    types = program.types()
    n_in = program.num_inputs
    active = program.active()
    calls = [j for j in active if program.nodes[j - n_in].op in NETWORK_OPS]
    ops_nodes = [j for j in active if j not in calls]
    slots = slots or bucket(len(ops_nodes))
    if len(ops_nodes) > slots:
        raise ValueError(f"program has {len(ops_nodes)} active operator nodes, more than {slots} slots")
    remap = {j: j for j in range(n_in)}
    remap |= {j: n_in + network_call(program.nodes[j - n_in]) for j in calls}
    remap |= {j: n_in + 4 + k for k, j in enumerate(ops_nodes)}
    op = np.zeros(slots, np.int32)
    in0, in1 = np.zeros(slots, np.int32), np.zeros(slots, np.int32)
    kind = np.ones(n_in + 4 + slots, np.int32)
    kind[:n_in] = [KIND[t] for t in types[:n_in]]
    kind[n_in : n_in + 4] = KIND[L]
    for k, j in enumerate(ops_nodes):
        node = program.nodes[j - n_in]
        op[k] = OPCODE[node.op]
        ins = [remap[i] for i in node.inputs] + [0, 0]
        in0[k], in1[k] = ins[0], ins[1]
        kind[n_in + 4 + k] = KIND[types[j]]
    used = tuple(c in {network_call(program.nodes[j - n_in]) for j in calls} for c in range(4))
    return ProgramArrays(op, in0, in1, kind, np.int32(remap[program.output])), used


# --- the DQN family as graphs (notes §1.2: the "first 7 nodes") ------------------------------------------------
_S_TM1, _A, _R, _D, _S_T = range(5)


def dqn_nodes(n_in: int) -> list[Node]:
    """Q(s,.), Q(s,a), Q'(s',.), M = max Q'(s',.), gamma_t M, Y = r + gamma_t M, 0.5 (Q - Y)^2 (L2Distance)."""
    b = n_in
    return [
        Node("QValues", (_S_TM1,)),
        Node("SelectList", (b, _A)),
        Node("TargetQValues", (_S_T,)),
        Node("MaxList", (b + 2,)),
        Node("DotProduct", (_D, b + 3)),
        Node("Add", (_R, b + 4)),
        Node("L2Distance", (b + 1, b + 5)),
    ]


def dqn_program(constants: tuple[float, ...] = CONSTANTS) -> Program:
    n_in = len(INPUTS) + len(constants)
    return Program(tuple(dqn_nodes(n_in)), output=n_in + 6, constants=constants)


def dqnreg_program(constants: tuple[float, ...] = CONSTANTS) -> Program:
    """The released DQNReg graph (dataset graph 000 w.r.t. theta): L2Distance(Q, Y) + MultiplyTenth(Q) = 0.5 delta^2 + 0.1 Q."""
    n_in = len(INPUTS) + len(constants)
    nodes = dqn_nodes(n_in) + [Node("MultiplyTenth", (n_in + 1,)), Node("Add", (n_in + 6, n_in + 7))]
    return Program(tuple(nodes), output=n_in + 8, constants=constants)


def ddqn_program(constants: tuple[float, ...] = CONSTANTS) -> Program:
    n_in = len(INPUTS) + len(constants)
    b = n_in
    nodes = dqn_nodes(n_in)[:3] + [
        Node("QValues", (_S_T,)),
        Node("ArgMaxList", (b + 3,)),
        Node("SelectList", (b + 2, b + 4)),
        Node("DotProduct", (_D, b + 5)),
        Node("Add", (_R, b + 6)),
        Node("L2Distance", (b + 1, b + 7)),
    ]
    return Program(tuple(nodes), output=b + 8, constants=constants)


# --- sampling and mutation -------------------------------------------------------------------------------------
def _candidates(types: list[str], upto: int, ops: tuple[str, ...], want: str | None) -> list[tuple[str, tuple[int, ...]]]:
    """Every (operator, inputs) over table entries < ``upto`` that type-checks (with output type ``want``)."""
    by_type: dict[str, list[int]] = {}
    for j in range(upto):
        by_type.setdefault(types[j], []).append(j)
    out = []
    for name in ops:
        for ins, result in OPS[OPCODE[name]].signatures:
            if want is not None and result != want:
                continue
            pools = [by_type.get(t, []) for t in ins]
            if name in NETWORK_OPS:
                pools = [[j for j in NETWORK_STATES if j < upto]]
            if all(pools):
                out.append((name, pools))
    return out


def _sample_node(rng: np.random.Generator, types: list[str], upto: int, ops: tuple[str, ...], want: str | None) -> Node | None:
    options = _candidates(types, upto, ops, want)
    if not options:
        return None
    name, pools = options[rng.integers(len(options))]
    return Node(name, tuple(int(pool[rng.integers(len(pool))]) for pool in pools))


def _output_choices(program: Program) -> list[int]:
    types = program.types()
    return [j for j in range(program.num_inputs, len(types)) if types[j] == R
            and dataclasses.replace(program, output=j).is_valid()]


def random_program(rng: np.random.Generator, base: Program, free_nodes: int, ops: tuple[str, ...]) -> Program:
    """``base``'s (frozen) nodes followed by ``free_nodes`` random nodes and a random valid output."""
    for _ in range(1000):
        nodes = list(base.nodes[: base.frozen])
        prog = dataclasses.replace(base, nodes=tuple(nodes))
        types = prog.types()
        while len(nodes) < base.frozen + free_nodes:
            node = _sample_node(rng, types, len(types), ops, None)
            nodes.append(node)
            types.append(OPS[OPCODE[node.op]].output(tuple(types[j] for j in node.inputs)))
        prog = dataclasses.replace(base, nodes=tuple(nodes), output=len(types) - 1)
        outputs = _output_choices(prog)
        if outputs:
            return dataclasses.replace(prog, output=int(outputs[rng.integers(len(outputs))]))
    raise RuntimeError("could not sample a valid program")


def with_free_nodes(rng: np.random.Generator, program: Program, free_nodes: int, ops: tuple[str, ...]) -> Program:
    """``program`` followed by ``free_nodes`` random (dead) nodes: the bootstrapped population of §4.2."""
    nodes, types = list(program.nodes), program.types()
    for _ in range(free_nodes):
        node = _sample_node(rng, types, len(types), ops, None)
        nodes.append(node)
        types.append(OPS[OPCODE[node.op]].output(tuple(types[j] for j in node.inputs)))
    return dataclasses.replace(program, nodes=tuple(nodes))


def mutate(rng: np.random.Generator, program: Program, ops: tuple[str, ...], max_tries: int = 100) -> Program:
    """Replace one non-frozen node (or the output pointer) by a random typed alternative; retry until valid."""
    n_in = program.num_inputs
    types = program.types()
    used = {j for node in program.nodes for j in node.inputs} | {program.output}
    targets = list(range(program.frozen, len(program.nodes))) + [-1]  # -1: the output pointer
    for _ in range(max_tries):
        t = targets[rng.integers(len(targets))]
        if t == -1:
            choices = [j for j in _output_choices(program) if j != program.output]
            if choices:
                return dataclasses.replace(program, output=int(choices[rng.integers(len(choices))]))
            continue
        j = n_in + t
        node = _sample_node(rng, types, j, ops, types[j] if j in used else None)
        if node is None:
            continue
        nodes = list(program.nodes)
        nodes[t] = node
        child = dataclasses.replace(program, nodes=tuple(nodes))
        if child.is_valid() and child != program:
            return child
    return program
