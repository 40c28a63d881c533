"""Regularized evolution bookkeeping with a fake evaluator; checkpoint and resume of the search state."""

import pickle

import numpy as np

from rlrepro.search import evolution
from rlrepro.search.evaluate import EvalResult
from rlrepro.search.hashing import functional_hash
from rlrepro.search.ops import SEARCHABLE

CONFIG = evolution.EvolutionConfig(
    population_size=6, tournament_size=2, mutation_probability=0.95, free_nodes=6, bootstrap="dqn",
    operators=SEARCHABLE, constants=(1.0, 0.5, 0.2, 0.1, 0.01),
)


def fake_evaluate(programs):
    """Fitness from the hash; half fail the hurdle."""
    results = []
    for p in programs:
        value = int(functional_hash(p)[:4], 16) / 65535
        results.append(EvalResult(value if value >= 0.5 else value / 2, (value,), value >= 0.5, 0.0))
    return results


def _run(state, proposals):
    while state.trials < proposals:
        if not state.population:
            evolution.add_batch(state, CONFIG, evolution.initial_programs(state, CONFIG), fake_evaluate)
            continue
        evolution.add_batch(state, CONFIG, [evolution.propose(state, CONFIG) for _ in range(2)], fake_evaluate)
    return state


def test_bookkeeping():
    state = _run(evolution.SearchState(rng=np.random.default_rng(0)), 30)
    assert len(state.population) == CONFIG.population_size
    assert state.trials == 30
    # every proposal is either a duplicate or a fresh evaluation
    assert state.duplicates + len(state.cache) == state.trials
    # the bootstrapped population is one function: 1 evaluation, the rest duplicates
    assert state.duplicates >= CONFIG.population_size - 1
    assert state.hurdle_failures == sum(not passed for passed in state.passed.values())
    stats = evolution.statistics(state)
    assert 0 <= stats["duplicate_fraction"] <= 1 and stats["best_fitness"] == max(state.cache.values())


def test_oldest_removed():
    state = _run(evolution.SearchState(rng=np.random.default_rng(0)), CONFIG.population_size)
    first = state.population[0]
    evolution.add_batch(state, CONFIG, [evolution.propose(state, CONFIG)], fake_evaluate)
    assert first not in state.population[: len(state.population) - 1] or state.population[0] is not first


def test_resume_equals_uninterrupted():
    straight = _run(evolution.SearchState(rng=np.random.default_rng(3)), 24)
    half = _run(evolution.SearchState(rng=np.random.default_rng(3)), 12)
    resumed = _run(pickle.loads(pickle.dumps(half)), 24)
    assert [i.key for i in resumed.population] == [i.key for i in straight.population]
    assert resumed.cache == straight.cache and resumed.duplicates == straight.duplicates
