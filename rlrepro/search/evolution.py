"""Regularized evolution over loss programs (Real et al. 2019; Evolving RL §3.3, Algorithm 2).

Each cycle: a tournament of ``tournament_size`` members drawn uniformly; the best one is the parent; the
child is a mutation of it (probability ``mutation_probability``) or a fresh random program. The child's
functional hash is looked up in the score cache: a duplicate takes the stored score without training.
Otherwise it is trained (hurdle first) and scored. The child joins and the oldest member leaves.
Children are proposed ``batch`` at a time from the same population and evaluated in parallel, then added
in proposal order, so a run depends on its seed only, not on worker timing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from rlrepro.search.hashing import TD_LIKE, functional_hash, td_likeness
from rlrepro.search.program import Program, dqn_program, mutate, random_program, with_free_nodes


@dataclasses.dataclass(frozen=True)
class EvolutionConfig:
    population_size: int
    tournament_size: int
    mutation_probability: float
    free_nodes: int
    bootstrap: str  # dqn | scratch
    operators: tuple[str, ...]
    constants: tuple[float, ...]


@dataclasses.dataclass
class Individual:
    program: Program
    key: str
    fitness: float


@dataclasses.dataclass
class SearchState:
    """Population (oldest first), the hash -> score cache, counters and the best programs seen (picklable)."""

    rng: np.random.Generator
    population: list[Individual] = dataclasses.field(default_factory=list)
    cache: dict[str, float] = dataclasses.field(default_factory=dict)
    programs: dict[str, Program] = dataclasses.field(default_factory=dict)  # one program per evaluated hash
    passed: dict[str, bool] = dataclasses.field(default_factory=dict)
    scores: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    trials: int = 0  # proposals (children), the search's budget; the initial population is counted apart
    duplicates: int = 0  # duplicates among the proposals
    initial: int = 0  # members of the initial population
    initial_duplicates: int = 0  # of which functional duplicates (the bootstrapped population's DQN copies)
    hurdle_failures: int = 0
    seconds: float = 0.0
    seed_key: str | None = None  # functional hash of the bootstrap seed (DQN), so the report can say "unchanged seed"


def _base(config: EvolutionConfig) -> Program:
    base = dqn_program(config.constants)
    return base if config.bootstrap == "dqn" else dataclasses.replace(base, frozen=2)  # scratch: Q(s,.), Q(s,a)


def initial_programs(state: SearchState, config: EvolutionConfig) -> list[Program]:
    """Bootstrap: DQN followed by random (unused) nodes; scratch: random programs after Q(s, a)."""
    base = _base(config)
    if config.bootstrap == "dqn":
        state.seed_key = functional_hash(base)
        return [with_free_nodes(state.rng, base, config.free_nodes, config.operators) for _ in range(config.population_size)]
    return [random_program(state.rng, base, config.free_nodes, config.operators) for _ in range(config.population_size)]


def propose(state: SearchState, config: EvolutionConfig) -> Program:
    """Tournament, then mutate the winner (or sample a fresh program)."""
    picks = state.rng.integers(len(state.population), size=config.tournament_size)
    parent = max((state.population[i] for i in picks), key=lambda ind: ind.fitness)
    if state.rng.random() < config.mutation_probability:
        return mutate(state.rng, parent.program, config.operators)
    return random_program(state.rng, _base(config), config.free_nodes, config.operators)


def add_batch(state: SearchState, config: EvolutionConfig, children: list[Program],
              evaluate: Callable[[list[Program]], list[Any]], *, initial: bool = False) -> None:
    """Score ``children`` (duplicates from the cache, the rest through ``evaluate``), add them, drop the oldest.

    ``initial``: the members of the initial population, counted apart from the proposals (the budget) so that
    a bootstrapped population's copies of DQN do not count as duplicate proposals.
    """
    keys = [functional_hash(child) for child in children]
    fresh: dict[str, Program] = {}
    duplicates = 0
    for key, child in zip(keys, children):
        if key in state.cache or key in fresh:
            duplicates += 1
        else:
            fresh[key] = child
    for key, result in zip(fresh, evaluate(list(fresh.values()))):
        state.cache[key] = result.fitness
        state.programs[key] = fresh[key]
        state.passed[key] = result.passed_hurdle
        state.scores[key] = result.scores
        state.hurdle_failures += 0 if result.passed_hurdle else 1
        state.seconds += result.seconds
    for key, child in zip(keys, children):
        state.population.append(Individual(child, key, state.cache[key]))
    if initial:
        state.initial += len(children)
        state.initial_duplicates += duplicates
    else:
        state.trials += len(children)
        state.duplicates += duplicates
    excess = len(state.population) - config.population_size
    if excess > 0:
        del state.population[:excess]


def run_proposals(state: SearchState, config: EvolutionConfig, proposals: int, per_round: int,
                  evaluate: Callable[[list[Program]], list[Any]]) -> None:
    """Propose and score ``proposals`` children, ``per_round`` at a time from the same population (the paper's
    asynchronous workers: each proposes from the population as it stands). The initial population is scored
    first, once, outside the count."""
    if not state.population:
        add_batch(state, config, initial_programs(state, config), evaluate, initial=True)
    target = state.trials + proposals
    while state.trials < target:
        n = min(per_round, target - state.trials)
        add_batch(state, config, [propose(state, config) for _ in range(n)], evaluate)


def statistics(state: SearchState) -> dict[str, float]:
    """Counts, and as fractions: duplicates among the proposals (the initial population apart), hurdle rejections
    among the evaluated."""
    evaluated = len(state.cache)
    fitness = [ind.fitness for ind in state.population]
    best_key = max(state.cache, key=state.cache.get) if state.cache else None
    return {
        "trials": float(state.trials),
        "programs_evaluated": float(evaluated),
        "duplicates": float(state.duplicates),
        "initial_population": float(state.initial),
        "initial_duplicates": float(state.initial_duplicates),
        "hurdle_rejections": float(state.hurdle_failures),
        "duplicate_fraction": state.duplicates / max(state.trials, 1),
        "hurdle_reject_fraction": state.hurdle_failures / max(evaluated, 1),
        "best_fitness": float(max(state.cache.values())) if state.cache else float("nan"),
        "population_mean_fitness": float(np.mean(fitness)) if fitness else float("nan"),
        "best_td_like": float(td_likeness(state.programs[best_key]) >= TD_LIKE) if best_key else float("nan"),
        "best_is_seed": float(best_key is not None and best_key == getattr(state, "seed_key", None)),
        "eval_minutes": state.seconds / 60.0,
    }


def top_programs(state: SearchState, n: int = 5) -> list[tuple[str, float, Program]]:
    """The ``n`` best distinct programs evaluated so far: (hash, fitness, program)."""
    ranked = sorted(state.cache.items(), key=lambda kv: -kv[1])[:n]
    return [(key, fitness, state.programs[key]) for key, fitness in ranked]
