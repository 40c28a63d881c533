"""What a small loss search can decide: the figures behind the cpu-scale comments of specs/evolving_rl/search_*.yaml.

    python scripts/search_reach.py hurdle specs/evolving_rl/search_dqnreg.yaml --seeds 10
        DQN, DQNReg and DDQN trained through the search's own hurdle (the spec's cpu settings) once per search seed:
        does the hurdle let a TD-like program through? (about 80 s per seed on 2 loaded cores)
    python scripts/search_reach.py first-td specs/evolving_rl/search_dqnreg.yaml --searches 3 --proposals 2000
        The search's evolution (the spec's cpu population, tournament, mutation, free nodes, bootstrap) with a
        stand-in for training: a TD-like program scores 1 and passes, anything else scores below 0.1 and fails.
        After how many proposals does the first TD-like program other than the seed appear? A lower bound on what
        a real search needs: there a TD-like mutant must also clear the hurdle and beat DQN's own score.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from rlrepro.search import evolution
from rlrepro.search.equations import equation
from rlrepro.search.evaluate import EvalResult, hurdle_scores
from rlrepro.search.hashing import TD_LIKE, functional_hash, td_likeness
from rlrepro.search.program import ddqn_program, dqn_program, dqnreg_program
from rlrepro.search.trainer import eval_task, evolution_config
from rlrepro.specs.loading import load_spec, resolve_agent, resolve_env


def _cpu_search(path: Path):
    spec = load_spec(path)
    agent = resolve_agent(spec, spec.variant_list()[0], "cpu")
    suite = resolve_env(spec, (spec.scales["cpu"].environments or [spec.environments[0].id])[0], "cpu")
    return agent, suite


def hurdle(path: Path, seeds: int) -> None:
    agent, suite = _cpu_search(path)
    constants = tuple(agent.constants)
    programs = {"DQN": dqn_program(constants), "DQNReg": dqnreg_program(constants), "DDQN": ddqn_program(constants)}
    scores: dict[str, list[float]] = {name: [] for name in programs}
    started = time.monotonic()
    for seed in range(seeds):
        task = dataclasses.replace(eval_task(agent, suite, seed), hurdle_batch=len(programs))
        for name, (value, _) in zip(programs, hurdle_scores(list(programs.values()), task)):
            scores[name].append(value)
        print(f"seed {seed}: " + ", ".join(f"{n} {v[-1]:.3f}" for n, v in scores.items())
              + f" ({time.monotonic() - started:.0f} s)", flush=True)
    for name, values in scores.items():
        v = np.array(values)
        print(f"{name}: clears the hurdle ({agent.hurdle_threshold}) in {int((v >= agent.hurdle_threshold).sum())} of "
              f"{len(v)} seeds; mean {v.mean():.3f}, min {v.min():.3f}")


def first_td(path: Path, searches: int, proposals: int) -> None:
    agent, _ = _cpu_search(path)
    config = evolution_config(agent)
    per_round = agent.proposals_per_round or agent.executor.workers
    found = []
    for seed in range(searches):
        state = evolution.SearchState(rng=np.random.default_rng([seed, 20_21]))  # as the search's own generator
        noise = np.random.default_rng(seed)
        first: list[tuple[int, str]] = []

        def stand_in(programs, state=state, noise=noise, first=first):
            results = []
            for program in programs:
                td = td_likeness(program) >= TD_LIKE
                if td and state.trials and not first and functional_hash(program) != state.seed_key:
                    first.append((state.trials, equation(program)))
                fitness = 1.0 if td else 0.1 * float(noise.random())
                results.append(EvalResult(fitness, (fitness,), td, 0.0))
            return results

        while state.trials < proposals and not first:
            evolution.run_proposals(state, config, min(50, proposals - state.trials), per_round, stand_in)
        duplicates = state.duplicates / max(state.trials, 1)
        print(f"search {seed}: " + (f"first TD-like program after {first[0][0]} proposals: {first[0][1]}" if first
              else f"no TD-like program in {state.trials} proposals") + f" ({100 * duplicates:.0f}% duplicates)",
              flush=True)
        found.append(first[0][0] if first else None)
    hits = sorted(f for f in found if f is not None)
    print(f"{len(hits)} of {searches} searches proposed a TD-like program within {proposals} proposals: {hits}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    h = sub.add_parser("hurdle")
    h.add_argument("spec", type=Path)
    h.add_argument("--seeds", type=int, default=10)
    f = sub.add_parser("first-td")
    f.add_argument("spec", type=Path)
    f.add_argument("--searches", type=int, default=3)
    f.add_argument("--proposals", type=int, default=2000)
    args = parser.parse_args()
    if args.command == "hurdle":
        hurdle(args.spec, args.seeds)
    else:
        first_td(args.spec, args.searches, args.proposals)


if __name__ == "__main__":
    main()
