"""The frozen arm's cost against training's, per agent kind, on the same cores: what ``rlrepro plan`` charges a control
arm (``rlrepro.workflow.cost.FROZEN_COST``).

``python -m rlrepro.bench frozen [--only impala,ddpg] [--chunks 3] [--rounds 3]``: for each kind, one repository spec
that trains it at the cpu scale (its first controlled variant and first environment, its cpu-scale configuration),
the training program and the frozen one (``learning: false``) are built, each compiled by one chunk, then timed in
interleaved rounds of ``--chunks`` chunks (medians; ``bench.timing.compare_calls``), so that the machine's load
hits both alike. Prints seconds per chunk of each and the ratio frozen / training.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rlrepro.agents.registry import build_trainer
from rlrepro.bench.timing import compare_calls
from rlrepro.specs import load_spec, resolve_agent, resolve_env
from rlrepro.specs.control import controlled_variants
from rlrepro.training.program import seed_keys

REPO = Path(__file__).resolve().parents[2]
#: One cpu-scale experiment per agent kind whose claims the frozen arm judges (the kinds of the main job).
SPECS = {
    "impala": "impala/offpolicy_correction_toy.yaml",
    "frodo": "frodo/random_walk.yaml",
    "td_lambda": "frodo/random_walk.yaml",
    "dqn": "evolving_rl/eval_classic_minigrid.yaml",
    "impala_sr": "synthetic_returns/chain.yaml",
    "vracer": "refer/mujoco_vracer.yaml",
    "ddpg": "refer/mujoco_ddpg.yaml",
    "naf": "refer/mujoco_naf.yaml",
    "ppo": "refer/mujoco_baselines.yaml",
    "acer": "refer/mujoco_baselines.yaml",
}


def _programs(kind: str, chunks: int):
    """(training, frozen) programs of ``kind``'s cpu-scale cell, with budgets of many chunks; None when no variant of
    that kind has a frozen arm at the cpu scale."""
    spec = load_spec(REPO / "specs" / SPECS[kind])
    size = spec.scale("cpu")
    for name in controlled_variants(spec, "cpu"):
        variant, _ = spec.variant_named(name)
        agent = resolve_agent(spec, variant, "cpu")
        if agent.kind != kind:
            continue
        env = resolve_env(spec, (size.environments or [e.id for e in spec.environments])[0], "cpu")
        first = build_trainer(agent, env, frames=1, run=spec.run)  # one chunk: its frames
        frames = first.frames_per_chunk * (chunks * 20 + 1)
        return tuple(build_trainer(a, env, frames=frames, run=spec.run)
                     for a in (agent, agent.model_copy(update={"learning": False})))
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench frozen", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SPECS), help="comma-separated agent kinds (default: all)")
    parser.add_argument("--chunks", type=int, default=2, help="chunks per timed round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (the median is kept)")
    args = parser.parse_args(argv)
    print(f"{'kind':<10} {'training s/chunk':>16} {'frozen s/chunk':>15} {'frozen / training':>18}")
    for kind in args.only.split(","):
        programs = _programs(kind.strip(), args.chunks)
        if programs is None:
            print(f"{kind:<10} no variant of this kind has a frozen arm at the cpu scale ({SPECS[kind]})")
            continue
        training, frozen = programs
        keys = seed_keys([0])
        steps = {name: (lambda state, p=program: p.run_chunk_batch(state)[0], program.init_batch(keys))
                 for name, program in (("training", training), ("frozen", frozen))}
        timing = compare_calls(steps, repeats=args.chunks, rounds=args.rounds)
        t, f = timing["training"].seconds_per_call, timing["frozen"].seconds_per_call
        print(f"{kind:<10} {t:>16.3f} {f:>15.3f} {f / t:>18.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
