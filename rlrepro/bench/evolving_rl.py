"""Evolving RL speed: hand-written DQNReg vs the same loss run by the interpreter, and programs per hour.

``python -m rlrepro.bench evolving-rl [--updates N] [--programs N]``: learner updates/s of both on the same
batch, network (MLP 256-256, batch 32, CartPole shapes) and cores, timed side by side in interleaved rounds,
their ratio (goal >= 0.8; the interpreter's default ``fused`` dispatch, and ``switch`` beside it), the compile
time a new program costs (none within a slot bucket), and, with ``--programs``, how many mutated programs
one process trains per hour with the cpu-scale search settings (CartPole 10k steps + MiniGrid-Empty-5x5 5k).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.bench.timing import compare_calls


def bench_updates(n: int, rounds: int = 7) -> dict[str, float]:
    """Updates/s of the hand-written DQNReg and of the same loss in the interpreter (both dispatches), timed
    side by side in ``rounds`` interleaved rounds of ``n // rounds`` updates (medians)."""
    from rlrepro.agents.dqn.config import DQNConfig
    from rlrepro.agents.dqn.learner import Batch, make_learner
    from rlrepro.search.interpreter import make_program_loss
    from rlrepro.search.ops import CONSTANTS
    from rlrepro.search.program import dqnreg_program, encode

    rng = np.random.default_rng(0)
    batch = Batch(
        jnp.asarray(rng.normal(size=(32, 4)), jnp.float32), jnp.asarray(rng.integers(0, 2, 32), jnp.int32),
        jnp.asarray(rng.normal(size=32), jnp.float32), jnp.full(32, 0.99, jnp.float32),
        jnp.asarray(rng.normal(size=(32, 4)), jnp.float32),
    )
    config = DQNConfig(loss="dqnreg", td_scale=0.5)
    arrays, calls = encode(dqnreg_program())
    hand = make_learner(config, (4,), 2)
    state = hand.init(jax.random.key(0))
    steps = {"hand": (jax.jit(hand.update), None)}
    for dispatch in ("fused", "switch"):
        learner = make_learner(config, (4,), 2, lambda apply, d=dispatch: make_program_loss(apply, 4, 2, CONSTANTS, calls, d))
        steps[f"interpreter_{dispatch}"] = (jax.jit(learner.update), arrays)
    timings = compare_calls(
        {name: (lambda s, f=f, p=p: f(s, batch, p)[0], state) for name, (f, p) in steps.items()},
        repeats=max(1, n // rounds), rounds=rounds,
    )
    rates = {name: 1.0 / t.seconds_per_call for name, t in timings.items()}
    return {
        "hand_updates_per_s": rates["hand"],
        "interpreter_updates_per_s": rates["interpreter_fused"],
        "ratio": rates["interpreter_fused"] / rates["hand"],
        "interpreter_switch_updates_per_s": rates["interpreter_switch"],
        "switch_ratio": rates["interpreter_switch"] / rates["hand"],
        "hand_compile_s": timings["hand"].first_call_seconds,
        "interpreter_compile_s": timings["interpreter_fused"].first_call_seconds,
    }


def bench_programs(n: int) -> dict[str, float]:
    from rlrepro.agents.dqn.config import DQNConfig
    from rlrepro.search.evaluate import EvalTask, evaluate_program
    from rlrepro.search.ops import SEARCHABLE
    from rlrepro.search.program import dqn_program, mutate, with_free_nodes
    from rlrepro.specs.environments import GymEnvSpec

    envs = (
        GymEnvSpec(kind="gym", id="cartpole", name="CartPole-v0", return_range=(0.0, 200.0)),
        GymEnvSpec(kind="gym", id="empty_5x5", name="MiniGrid-Empty-5x5-v0", observation="minigrid_fully_observed",
                   max_episode_steps=100, return_range=(0.0, 1.0)),
    )
    task = EvalTask(envs, (10_000, 5_000), (DQNConfig(), DQNConfig()), 0.6, "mean_last50", 0)
    rng = np.random.default_rng(0)
    program = with_free_nodes(rng, dqn_program(), 14, SEARCHABLE)
    evaluate_program(program, task)  # compile
    started, passed = time.perf_counter(), 0
    for _ in range(n):
        program = mutate(rng, program, SEARCHABLE)
        passed += evaluate_program(program, task).passed_hurdle
    seconds = (time.perf_counter() - started) / n
    return {"seconds_per_program": seconds, "programs_per_hour_per_process": 3600 / seconds, "hurdle_passed": passed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench evolving-rl", description=__doc__)
    parser.add_argument("--updates", type=int, default=2000, help="timed learner updates per loss")
    parser.add_argument("--programs", type=int, default=0, help="mutated programs to train (0: skip)")
    args = parser.parse_args(argv)
    for name, value in bench_updates(args.updates).items():
        print(f"{name:32s} {value:,.3f}")
    if args.programs:
        for name, value in bench_programs(args.programs).items():
            print(f"{name:32s} {value:,.3f}")
    return 0
