"""What an LSTM core costs an IMPALA+SR spec's training chunks at a scale: seconds per chunk per core size.

The spec's own program at the scale (its frames, seeds vmapped in one job, batch, unroll and chunk), one variant,
rebuilt with each ``--lstm-sizes`` value (``none``: feed-forward) and timed side by side in interleaved rounds
(``compare_calls``), so a change of the machine's load hits every size alike: the ratios are what it reports.
The first call includes compilation; the init (the seeds' inits one after another with an LSTM) is timed apart.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax

from rlrepro.bench.timing import compare_calls


def chunk_step(spec_path: Path, scale: str, variant: str, lstm_size: int | None, seeds: int | None,
               updates_per_chunk: int | None = None) -> tuple:
    """``(step, state, init_seconds, frames_per_chunk, seeds)`` for the spec's program at ``scale`` with the core
    ``lstm_size`` (and ``updates_per_chunk`` in place of the spec's, for a tiny check)."""
    from rlrepro.agents.impala_sr.build import build_impala_sr  # noqa: PLC0415 (JAX only when run)
    from rlrepro.specs import load_spec  # noqa: PLC0415
    from rlrepro.specs.loading import resolve_agent  # noqa: PLC0415

    spec = load_spec(spec_path)
    chosen = next(v for v in spec.variants if v.name == variant)
    agent = resolve_agent(spec, chosen, scale)
    agent = agent.model_copy(update={"network": agent.network.model_copy(update={"lstm_size": lstm_size})})
    env_id = (spec.scale(scale).environments or [spec.environments[0].id])[0]
    env_spec = next(e for e in spec.environments if e.id == env_id)
    run = spec.run if updates_per_chunk is None else spec.run.model_copy(update={"updates_per_chunk": updates_per_chunk})
    program = build_impala_sr(agent, env_spec, frames=spec.scale(scale).frames, run=run)
    count = seeds or spec.scale(scale).seeds
    started = time.perf_counter()
    state = jax.block_until_ready(program.init_batch(jax.random.split(jax.random.key(0), count)))
    return lambda s: program.run_chunk_batch(s)[0], state, time.perf_counter() - started, program.frames_per_chunk, count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench sr-lstm-cost", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=Path("specs/synthetic_returns/key_to_door.yaml"),
                        help="an impala_sr spec on a pure-JAX task")
    parser.add_argument("--scale", default="cpu", help="the scale whose agent, frames and seeds are used")
    parser.add_argument("--variant", default="sr", help="the variant timed")
    parser.add_argument("--lstm-sizes", nargs="+", default=["none", "64", "256"], metavar="SIZE",
                        help="core sizes; none: feed-forward")
    parser.add_argument("--seeds", type=int, default=None, metavar="N", help="seeds vmapped in the job (default: the scale's)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of one chunk each")
    parser.add_argument("--updates-per-chunk", type=int, default=None, metavar="N", help="default: the spec's run.updates_per_chunk")
    args = parser.parse_args(argv)
    steps, inits = {}, {}
    for raw in args.lstm_sizes:
        size = None if raw == "none" else int(raw)
        step, state, inits[raw], frames, seeds = chunk_step(args.spec, args.scale, args.variant, size, args.seeds,
                                                            args.updates_per_chunk)
        steps[raw] = (step, state)
    timings = compare_calls(steps, repeats=1, rounds=args.rounds)
    base = timings[args.lstm_sizes[0]].seconds_per_call
    print(f"{args.spec} at {args.scale}, variant {args.variant}:")
    print(f"  {seeds} seeds vmapped in one job, {frames:,} steps per seed per chunk")
    for name, timing in timings.items():
        print(f"  lstm {name:>4}: {timing.seconds_per_call:7.1f} s per chunk ({timing.seconds_per_call / base:.2f}x "
              f"{args.lstm_sizes[0]}), first {timing.first_call_seconds:.1f} s, init {inits[name]:.1f} s")
    return 0
