"""Regularized evolution bookkeeping with a fake evaluator; checkpoint and resume of the search state."""

import dataclasses
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
    evolution.run_proposals(state, CONFIG, proposals - state.trials, 2, fake_evaluate)
    return state


def test_bookkeeping():
    state = _run(evolution.SearchState(rng=np.random.default_rng(0)), 30)
    assert len(state.population) == CONFIG.population_size
    assert state.trials == 30
    # every proposal and initial member is either a duplicate or a fresh evaluation
    assert state.duplicates + state.initial_duplicates + len(state.cache) == state.trials + state.initial
    # the bootstrapped population is one function: 1 evaluation, the rest duplicates (counted apart)
    assert state.initial == CONFIG.population_size and state.initial_duplicates == CONFIG.population_size - 1
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


def test_initial_population_is_counted_apart_from_the_proposal_budget():
    """Issue 11 item 8: the cpu-scale search (population 20, 200 proposals in chunks of 10) made 210 proposals,
    because the initial population counted as proposals and overshot the first chunk; its 19 DQN copies were
    counted as duplicate proposals (19 of 210 = 9 points of duplicate fraction). Now 20 chunks of 10 proposals
    make exactly 200 proposals, after the 20 initial members, and the copies are not duplicate proposals."""
    config = dataclasses.replace(CONFIG, population_size=20)
    state = evolution.SearchState(rng=np.random.default_rng(1))
    for _ in range(20):
        evolution.run_proposals(state, config, 10, 1, fake_evaluate)
    assert state.trials == 200 and state.initial == 20 and state.initial_duplicates == 19
    stats = evolution.statistics(state)
    assert stats["trials"] == 200 and stats["initial_population"] == 20
    assert stats["duplicate_fraction"] == state.duplicates / 200
    assert state.duplicates + state.initial_duplicates + len(state.cache) == 220
