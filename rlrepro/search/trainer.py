"""``build_loss_search``: the search as a runner program (one job per search seed, chunks of proposals).

The job's state is one ``SearchState`` per seed (population, score cache, counters, generator): pickled in
the runner's checkpoint after every chunk, so an interrupted search resumes with its population and cache.
Metrics per chunk: ``frames`` = proposals so far, ``episodes`` = proposals in the chunk, ``mean_return`` =
the best fitness found (so the runner's final_return is the best score), and the search statistics
(duplicate and hurdle fractions, programs evaluated, whether the best program is TD-like). The initial
population is scored before the first proposal and counted apart from the budget (``frames`` = proposals). The best
programs, as equations, go to ``search.md`` and ``search.json`` in each run folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from rlrepro.agents.dqn.build import dqn_config
from rlrepro.training.program import seeds_of
from rlrepro.environments.errors import UnsupportedSetupError
from rlrepro.search import evolution
from rlrepro.search.evaluate import EvalResult, EvalTask, evaluate_program, evaluate_rest, hurdle_scores, jax_hurdle_env
from rlrepro.search.executor import make_executor, placement
from rlrepro.search.budget import loss_search_chunks
from rlrepro.search.ops import SEARCHABLE
from rlrepro.training.program import TrainerProgram


class SearchMetrics(NamedTuple):
    frames: np.ndarray
    episodes: np.ndarray
    mean_return: np.ndarray
    best_fitness: np.ndarray
    population_mean_fitness: np.ndarray
    programs_evaluated: np.ndarray
    duplicate_fraction: np.ndarray
    hurdle_reject_fraction: np.ndarray
    best_td_like: np.ndarray
    eval_minutes: np.ndarray
    best_is_seed: np.ndarray  # 1 when the best program is the unchanged bootstrap seed (DQN): nothing better found


def evolution_config(agent: Any) -> evolution.EvolutionConfig:
    operators = tuple(agent.operators) if agent.operators else SEARCHABLE
    unknown = sorted(set(operators) - set(SEARCHABLE))
    if unknown:
        raise UnsupportedSetupError(f"agent.operators: unknown {unknown}; known {list(SEARCHABLE)}")
    return evolution.EvolutionConfig(
        population_size=agent.population_size,
        tournament_size=agent.tournament_size,
        mutation_probability=agent.mutation_probability,
        free_nodes=agent.free_nodes,
        bootstrap=agent.bootstrap,
        operators=operators,
        constants=tuple(agent.constants),
    )


def eval_task(agent: Any, env_spec: Any, seed: int) -> EvalTask:
    members = tuple(env_spec.environments)
    missing = [env.id for env in members if env.id not in agent.env_steps]
    if missing:
        raise UnsupportedSetupError(f"agent.env_steps: no budget for {missing}")
    no_range = [env.id for env in members if env.return_range is None]
    if no_range:
        raise UnsupportedSetupError(f"environments {no_range}: a search needs return_range to normalize returns")
    if agent.hurdle_backend == "jax":
        jax_hurdle_env(members[0])  # a clear error now, not in the first chunk
    elif agent.hurdle_batch != 1:
        raise UnsupportedSetupError(f"agent.hurdle_batch {agent.hurdle_batch}: batching needs hurdle_backend 'jax'")
    return EvalTask(members, tuple(agent.env_steps[env.id] for env in members),
                    tuple(dqn_config(agent.inner, env.id, learning=agent.learning) for env in members),
                    agent.hurdle_threshold, agent.fitness, seed,
                    agent.hurdle_backend, agent.hurdle_batch)


def dqn_hurdle_score(agent: Any, env_spec: Any, seed: int) -> float:
    """DQN's own score on a search's hurdle, with the search's settings (budget, fitness, backend): the loss the
    bootstrapped population starts from must clear the hurdle, or nearly every program stops there (issue 11
    item 7: 20,000 CartPole steps scored over all episodes gave DQN about 0.45 against a 0.6 hurdle)."""
    import dataclasses

    from rlrepro.search.program import dqn_program

    task = eval_task(agent, env_spec, seed)
    program = dqn_program(tuple(agent.constants))
    if task.hurdle_backend == "jax":
        return hurdle_scores([program], dataclasses.replace(task, hurdle_batch=1))[0][0]
    first = dataclasses.replace(task, environments=task.environments[:1], steps=task.steps[:1], inner=task.inner[:1])
    return evaluate_program(program, first).scores[0]


class _Search:
    """Runs proposals for a batch of search seeds through one executor."""

    def __init__(self, agent: Any, env_spec: Any, setup: "LossSearchSetup"):
        self.agent, self.env_spec, self.setup = agent, env_spec, setup
        self.config = setup.evolution
        self.executor = None

    def _executor(self):
        if self.executor is None:
            ex = self.agent.executor
            self.executor = make_executor(*placement(ex.kind, ex.workers, ex.address))  # the environment may override it
        return self.executor

    def _evaluate(self, task: EvalTask):
        def run(programs: list) -> list:
            if task.hurdle_backend == "jax":
                return self._evaluate_jax_hurdle(programs, task)
            futures = [self._executor().submit(evaluate_program, p, task) for p in programs]
            return [f.result() for f in futures]
        return run

    def _evaluate_jax_hurdle(self, programs: list, task: EvalTask) -> list:
        """The hurdle in this process, ``hurdle_batch`` programs at a time; a program that passes goes on to the
        other environments in the executor while the next batch trains (a failing one frees its slot)."""
        results: list = [None] * len(programs)
        futures = {}
        for start in range(0, len(programs), task.hurdle_batch):
            chunk = programs[start : start + task.hurdle_batch]
            for i, (program, (value, seconds)) in enumerate(zip(chunk, hurdle_scores(chunk, task)), start):
                passed = value >= task.hurdle_threshold
                if passed and len(task.environments) > 1:
                    futures[i] = self._executor().submit(evaluate_rest, program, task, value, seconds)
                else:
                    results[i] = EvalResult(value, (value,), passed, seconds)
        for i, future in futures.items():
            results[i] = future.result()
        return results

    def init(self, keys: Any) -> list[evolution.SearchState]:
        return [evolution.SearchState(rng=np.random.default_rng([seed, 20_21])) for seed in seeds_of(keys)]

    def run_chunk(self, states: list[evolution.SearchState], trials: int, seeds: list[int]):
        per_round = self.setup.proposals_per_round
        for state, seed in zip(states, seeds):
            evaluate = self._evaluate(eval_task(self.agent, self.env_spec, seed))
            evolution.run_proposals(state, self.config, trials, per_round, evaluate)
        stats = [evolution.statistics(s) for s in states]
        first = [s.trials for s in states]
        return states, SearchMetrics(
            frames=np.array(first, np.int64),
            episodes=np.array([trials] * len(states)),
            mean_return=np.array([s["best_fitness"] for s in stats]),
            **{name: np.array([s[name] for s in stats]) for name in SearchMetrics._fields[3:]},
        )


def write_search_report(states: list[evolution.SearchState], run_dirs: list[Path], top: int = 10) -> None:
    """The best programs of each seed as equations, with scores and the search statistics."""
    from rlrepro.search.equations import equation
    from rlrepro.search.hashing import td_likeness

    for state, run_dir in zip(states, run_dirs):
        stats = evolution.statistics(state)
        best = [
            {"hash": key, "fitness": fitness, "scores": list(state.scores[key]), "equation": equation(program),
             "td_like": td_likeness(program), "passed_hurdle": state.passed[key]}
            for key, fitness, program in evolution.top_programs(state, top)
        ]
        Path(run_dir, "search.json").write_text(json.dumps({"statistics": stats, "best": best}, indent=2) + "\n")
        lines = ["# Loss search: best programs", "",
                 f"{int(stats['trials'])} proposals after an initial population of {int(stats['initial_population'])}, "
                 f"{int(stats['programs_evaluated'])} programs trained, "
                 f"{int(stats['duplicates'])} duplicates ({100 * stats['duplicate_fraction']:.0f}%), "
                 f"{int(stats['hurdle_rejections'])} of the trained rejected by the hurdle "
                 f"({100 * stats['hurdle_reject_fraction']:.0f}%).", "",
                 "| rank | fitness | per-environment | TD-likeness | loss |", "|---|---|---|---|---|"]
        for i, b in enumerate(best, 1):
            scores = ", ".join(f"{v:.3f}" for v in b["scores"])
            lines.append(f"| {i} | {b['fitness']:.3f} | {scores} | {b['td_like']:.2f} | `{b['equation']}` |")
        Path(run_dir, "search.md").write_text("\n".join(lines) + "\n")


def build_loss_search(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """The search over ``frames`` proposals (programs), ``agent.trials_per_chunk`` per chunk."""
    from rlrepro.environments.availability import require_backend

    if env_spec.kind != "gym_suite":
        raise UnsupportedSetupError(f"a loss search needs a 'gym_suite' environment (hurdle first), got '{env_spec.kind}'")
    require_backend(env_spec)
    search = _Search(agent, env_spec, resolve_loss_search(agent, env_spec, frames=frames, run=run))
    chunks = loss_search_chunks(agent, env_spec, frames=frames, run=run)
    holder: dict[str, list[int]] = {}

    def init_batch(keys: Any) -> list[evolution.SearchState]:
        holder["seeds"] = seeds_of(keys)
        return search.init(keys)

    def run_chunk_batch(states: list[evolution.SearchState]):
        return search.run_chunk(states, chunks.updates_per_chunk, holder["seeds"])

    return TrainerProgram(init_batch, run_chunk_batch, chunks.num_chunks, chunks.updates_per_chunk,
                          chunks.frames_per_chunk, write_search_report)


class LossSearchSetup(NamedTuple):
    """Everything a loss search takes from its agent spec (``AgentEntry.config`` of ``loss_search``)."""

    evolution: evolution.EvolutionConfig
    task: EvalTask
    executor: Any
    trials_per_chunk: int
    proposals_per_round: int  # children proposed from one population before any joins it


def resolve_loss_search(agent: Any, env_spec: Any, *, frames: int, run: Any) -> LossSearchSetup:
    """The search's configuration from its spec (the task at seed 0; each run re-derives it from its seed)."""
    del frames, run
    per_round = agent.proposals_per_round or agent.executor.workers
    return LossSearchSetup(
        evolution_config(agent), eval_task(agent, env_spec, 0), agent.executor, agent.trials_per_chunk, per_round
    )
