"""TD-likeness that means TD: the probe accepts bootstrapped TD losses and rejects regressions onto r or a constant;
a search reports when its best program is the unchanged DQN seed."""

from __future__ import annotations

import dataclasses
import functools

import pytest

from rlrepro.search import evolution
from rlrepro.search.evaluate import EvalResult
from rlrepro.search.hashing import TD_LIKE, functional_hash, td_likeness
from rlrepro.search.ops import CONSTANTS, INPUTS, SEARCHABLE
from rlrepro.search.program import Node, Program, ddqn_program, dqn_nodes, dqn_program, dqnreg_program

N_IN = len(INPUTS) + len(CONSTANTS)
S_TM1, A_TM1, R_T, DISCOUNT, S_T = range(5)
ONE = len(INPUTS)  # the constant 1.0 (CONSTANTS[0])


def q_sa() -> list[Node]:
    return [Node("QValues", (S_TM1,)), Node("SelectList", (N_IN, A_TM1))]


def reward_regression() -> Program:
    """0.5 (Q - r)^2: no bootstrap."""
    return Program((*q_sa(), Node("L2Distance", (N_IN + 1, R_T))), output=N_IN + 2)


def constant_regression() -> Program:
    """0.5 (Q - 1)^2: a regression onto a constant."""
    return Program((*q_sa(), Node("L2Distance", (N_IN + 1, ONE))), output=N_IN + 2)


def dqnclipped() -> Program:
    """max(Q, delta^2 + Y) + max(Q - Y, gamma M^2) (Evolving RL §4.3), delta = Q - Y."""
    b = N_IN  # dqn_nodes: b+1 = Q, b+3 = M, b+5 = Y
    nodes = dqn_nodes(N_IN)[:6] + [
        Node("Subtract", (b + 1, b + 5)),  # b+6 delta
        Node("DotProduct", (b + 6, b + 6)),  # b+7 delta^2
        Node("Add", (b + 7, b + 5)),  # b+8 delta^2 + Y
        Node("Max", (b + 1, b + 8)),  # b+9
        Node("DotProduct", (b + 3, b + 3)),  # b+10 M^2
        Node("DotProduct", (DISCOUNT, b + 10)),  # b+11 gamma M^2
        Node("Max", (b + 6, b + 11)),  # b+12 max(Q - Y, gamma M^2)
        Node("Add", (b + 9, b + 12)),
    ]
    return Program(tuple(nodes), output=b + 13)


@functools.cache
def score(name: str) -> float:
    """td_likeness of a named graph, compiled once per test process."""
    return td_likeness(PROGRAMS[name]())


PROGRAMS = {"dqn": dqn_program, "ddqn": ddqn_program, "dqnreg": dqnreg_program, "dqnclipped": dqnclipped,
            "(Q-r)^2": reward_regression, "(Q-1)^2": constant_regression,
            "Q": lambda: dataclasses.replace(dqn_program(), output=N_IN + 1)}


def test_dqn_is_td_like_and_the_reward_regression_is_not() -> None:
    """(Q - r)^2 scored 0.997 with the old probe (r dominated its TD error); now the bootstrap term dominates."""
    assert reward_regression().is_valid()
    assert score("dqn") == pytest.approx(1.0, abs=1e-3)  # the gradient of 0.5 delta^2 is delta itself
    assert score("(Q-r)^2") < 0.5


@pytest.mark.slow  # one interpreter compile per graph: about a minute on a loaded 2-core machine
@pytest.mark.parametrize("name", ["ddqn", "dqnreg", "dqnclipped"])
def test_bootstrapped_td_losses_are_td_like(name: str) -> None:
    assert PROGRAMS[name]().is_valid()
    assert score(name) >= TD_LIKE
    if name != "dqnclipped":  # DQNReg adds the constant 0.1; double DQN bootstraps from Q'(s', argmax Q(s', .))
        assert score(name) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["(Q-1)^2", "Q"])
def test_regressions_onto_a_constant_or_nothing_are_not_td_like(name: str) -> None:
    assert PROGRAMS[name]().is_valid()
    assert score(name) < 0.5


CONFIG = evolution.EvolutionConfig(
    population_size=4, tournament_size=2, mutation_probability=0.95, free_nodes=4, bootstrap="dqn",
    operators=SEARCHABLE, constants=CONSTANTS,
)


def _evaluate_with(best_key: str | None, best: float = 1.0):
    """Fitness ``best`` for the program whose functional hash is ``best_key``, 0.5 for every other."""
    def evaluate(programs):
        return [EvalResult(best if functional_hash(p) == best_key else 0.5, (0.5,), True, 0.0) for p in programs]
    return evaluate


def test_statistics_say_when_the_best_program_is_the_unchanged_seed() -> None:
    state = evolution.SearchState(rng=__import__("numpy").random.default_rng(0))
    seed_key = functional_hash(dqn_program(CONSTANTS))
    evolution.add_batch(state, CONFIG, evolution.initial_programs(state, CONFIG), _evaluate_with(seed_key))
    assert state.seed_key == seed_key
    stats = evolution.statistics(state)
    assert stats["best_is_seed"] == 1.0 and stats["best_td_like"] == 1.0
    better = dqnreg_program(CONSTANTS)
    evolution.add_batch(state, CONFIG, [better], _evaluate_with(functional_hash(better), best=2.0))
    stats = evolution.statistics(state)
    assert stats["best_is_seed"] == 0.0 and stats["best_td_like"] == 1.0  # DQNReg: a new program, still TD-like
