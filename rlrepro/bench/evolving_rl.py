"""Evolving RL speed: hand-written DQNReg vs the same loss run by the interpreter, and programs per hour.

``python -m rlrepro.bench evolving-rl [--updates N] [--programs ROUNDS] [--batches K ...] [--env-steps N]``:
learner updates/s of both on the same batch, network (MLP 256-256, batch 32, CartPole shapes) and cores, timed
side by side in interleaved rounds, their ratio (goal >= 0.8; the interpreter's default ``fused`` dispatch, and
``switch`` beside it), the compile time a new program costs (none within a slot bucket); with ``--programs``,
hurdle runs per hour (the cpu-scale search's CartPole 10k steps) through the host loop one by one (before issue
16) and through the compiled loop with K programs side by side, against the bound from the bare update rate,
and a MiniGrid-Empty-5x5 run (5k steps) for programs that pass; with ``--env-steps``, env steps/s of the
compiled loop with purejaxrl's CartPole DQN settings.
"""

from __future__ import annotations

import argparse
import json
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


def _cpu_search_setting():
    from rlrepro.agents.dqn.config import DQNConfig
    from rlrepro.specs.environments import GymEnvSpec

    envs = (
        GymEnvSpec(kind="gym", id="cartpole", name="CartPole-v0", return_range=(0.0, 200.0)),
        GymEnvSpec(kind="gym", id="empty_5x5", name="MiniGrid-Empty-5x5-v0", observation="minigrid_fully_observed",
                   max_episode_steps=100, return_range=(0.0, 1.0)),
    )
    return envs, (10_000, 5_000), (DQNConfig(), DQNConfig())


def bench_programs(n: int, batches: tuple[int, ...], updates_per_s: float | None, host: bool = True) -> dict[str, float]:
    """Hurdle runs (CartPole, 10k steps, the cpu-scale search's inner loop) per hour, side by side in ``n``
    interleaved rounds: the host loop one program at a time (before), the compiled loop with K = 1 and with each
    batch size K in ``batches`` (programs in lockstep); plus one MiniGrid-Empty-5x5 run (5k steps, host loop in
    both), the extra cost of a program that passes the hurdle (``host=False`` leaves out the host loop, the slow
    "before"; its speed-up is then not reported). Bound: 3,600 x bare interpreted updates/s /
    updates per hurdle run (the update alone, nothing else)."""
    from rlrepro.search.evaluate import EvalTask, host_dqn, evaluate_rest, hurdle_scores, score
    from rlrepro.search.ops import SEARCHABLE
    from rlrepro.search.program import dqn_program, mutate, with_free_nodes
    from rlrepro.bench.timing import compare_calls

    envs, steps, inner = _cpu_search_setting()
    rng = np.random.default_rng(0)
    base = with_free_nodes(rng, dqn_program(), 14, SEARCHABLE)
    programs = [base] + [mutate(rng, base, SEARCHABLE) for _ in range(max(batches) - 1)]

    def host_run(_):
        dqn, arrays = host_dqn(envs[0], base, inner[0])
        state, _ = dqn.run(dqn.init([0], steps[0]), steps[0], program=arrays)
        return score(state.host.episode_returns[0], envs[0].return_range, "mean_last50")

    def compiled(k):
        task = EvalTask(envs, steps, inner, 0.6, "mean_last50", 0, "jax", k)
        return lambda _: hurdle_scores(programs[:k], task)

    calls = {"host_one_by_one": (host_run, None)} if host else {}
    calls["compiled_k1"] = (compiled(1), None)
    calls |= {f"compiled_k{k}": (compiled(k), None) for k in batches if k != 1}
    rest_task = EvalTask(envs, steps, inner, 0.6, "mean_last50", 0)
    calls["empty5x5_rest"] = (lambda _: evaluate_rest(base, rest_task, 1.0), None)
    timings = compare_calls(calls, repeats=1, rounds=n)
    rest = timings.pop("empty5x5_rest").seconds_per_call
    out: dict[str, float] = {}
    for name, t in timings.items():
        k = 1 if name == "host_one_by_one" else int(name.split("_k")[1])
        per_program = t.seconds_per_call / k
        out[f"{name}_s_per_hurdle_run"] = per_program
        out[f"{name}_programs_per_h_failing"] = 3600 / per_program
        out[f"{name}_programs_per_h_passing"] = 3600 / (per_program + rest)
        out[f"{name}_first_call_s"] = t.first_call_seconds
    out["empty5x5_rest_s"] = rest
    if updates_per_s:
        updates = steps[0] - inner[0].min_replay
        bound = 3600 * updates_per_s / updates
        out["bound_programs_per_h_failing"] = bound
        for name in timings:
            out[f"{name}_ratio_to_bound"] = out[f"{name}_programs_per_h_failing"] / bound
    if host:
        out["speedup_compiled_k1_vs_host"] = (out["compiled_k1_programs_per_h_failing"]
                                              / out["host_one_by_one_programs_per_h_failing"])
    out["hurdle_steps"] = steps[0]
    return out


def bench_env_steps(steps: int, k: int) -> dict[str, float]:
    """Env steps/s of the compiled DQN loop with purejaxrl's CartPole DQN settings (MLP 120-84, batch 128, buffer
    10k, lr 2.5e-4, target every 500 updates, learning after 1000 steps, one update per 10 steps), hand-written DQN
    loss: one program alone, and ``k`` programs in lockstep (env steps counted over all of them)."""
    import jax.numpy as jnp

    from rlrepro.agents.dqn.config import DQNConfig
    from rlrepro.agents.dqn.jax_loop import compiled_run, seed_key
    from rlrepro.bench.timing import compare_calls
    from rlrepro.environments.jax_envs.cartpole import CartPole

    config = DQNConfig(hidden_sizes=(120, 84), batch_size=128, replay_capacity=10_000, learning_rate=2.5e-4,
                       target_period=500, min_replay=1000, update_period=10, epsilon_decay_steps=steps // 2)
    run = compiled_run(config, CartPole(max_steps=500), 4, 2, (0.0, 500.0), steps)
    calls = {}
    for n in (1, k):
        dummy = jnp.zeros((n,))  # the hand-written loss ignores the program; its leading axis sets K
        calls[f"k{n}"] = (lambda _, d=dummy: run(seed_key(0), d), None)
    timings = compare_calls(calls, repeats=1, rounds=3)
    return {f"env_steps_per_s_{name}": steps * (1 if name == "k1" else k) / t.seconds_per_call for name, t in timings.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench evolving-rl", description=__doc__)
    parser.add_argument("--updates", type=int, default=2000, help="timed learner updates per loss")
    parser.add_argument("--programs", type=int, default=0, help="interleaved rounds of hurdle runs (0: skip)")
    parser.add_argument("--batches", type=int, nargs="*", default=[2, 4], help="batch sizes K of the compiled loop")
    parser.add_argument("--env-steps", type=int, default=0, help="steps of the purejaxrl-settings run (0: skip)")
    parser.add_argument("--no-host", action="store_true",
                        help="with --programs: leave out the host loop (one program at a time, the slow 'before')")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures to PATH (JSON)")
    args = parser.parse_args(argv)
    figures = bench_updates(args.updates)
    for name, value in figures.items():
        print(f"{name:44s} {value:,.3f}")
    if args.programs:
        programs = bench_programs(args.programs, tuple(args.batches), figures["interpreter_updates_per_s"],
                                  host=not args.no_host)
        for name, value in programs.items():
            print(f"{name:44s} {value:,.3f}")
        figures |= programs
    if args.env_steps:
        env_steps = bench_env_steps(args.env_steps, 10)
        for name, value in env_steps.items():
            print(f"{name:44s} {value:,.0f}")
        figures |= env_steps
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=1)
    return 0
