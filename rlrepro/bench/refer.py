"""ReF-ER / V-RACER speed: environment-only, learner-only and end-to-end steps/s on the same cores, and their ratio.

``python -m rlrepro.bench refer [--env InvertedPendulum-v5] [--seeds 3] [--steps 500] [--rounds 3]``; with
``--memory N`` the far-fraction bookkeeping, with ``--per N`` rank-based PER's per-step cost, on a full memory of N.

With F = 1 (one gradient step per environment step, Alg. 1) the host loop is serial: per lockstep step it
steps every seed's environment, then makes one jitted call (update of every seed + next actions). So the parts
allow 1 / (t_env + t_learner) steps/s, the learner timed with the same fixed batch and blocked after every call
(the loop needs each call's actions on the host). The end-to-end loop adds the replay work on the host (batch
gathering and transfer, V/rho write-back and the n_far count, Q^ret refresh every 1000 steps; the write-back's
gathers run while the jitted call does, since JAX dispatches it asynchronously). A fourth part
times the same jitted call with the environments stepped between calls (untimed), as the loop makes it: the
call is slower when it does not run back to back (XLA's CPU worker threads go idle between calls), which is
where most of the gap to the parts' rate was found. The parts are timed in interleaved rounds (medians), so
that a change of the machine's load hits all alike; the ratio end-to-end / allowed is the figure of merit
(goal >= 0.8).

``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false`` does not change these programs (checked with jax/jaxlib 0.10.2,
notes/s22/refer-speed.md): XLA's CPU thunk runtime reads that flag only for convolutions and FFTs, the ReF-ER
networks are MLPs (their dots run on XLA's intra-op thread pool either way: the same worker threads busy per call,
results bit for bit the same); differences seen with and without it were the shared machine's load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import jax
import numpy as np

from rlrepro.replay.episodes import EpisodeReplay
from rlrepro.training.refer_config import ReferConfig
from rlrepro.agents.vracer import learner as vlearner
from rlrepro.agents.vracer.config import VRacerConfig
from rlrepro.agents.vracer.loop import HostVRacer
from rlrepro.bench.timing import compare_calls
from rlrepro.environments.mujoco import MujocoHostEnv
from rlrepro.plan_text import wrap
from rlrepro.specs.environments import MujocoEnvSpec


def _env_spec(name: str) -> MujocoEnvSpec:
    return MujocoEnvSpec(kind="mujoco", id="bench", name=name, paper_name=name.replace("-v5", "-v2"),
                         changes_from_paper="see specs/refer", comparable_to_paper=False)


def _time_env(envs: list[MujocoHostEnv], rng: np.random.Generator, steps: int) -> float:
    started = time.perf_counter()
    for _ in range(steps):
        for env in envs:
            _, _, terminated, truncated = env.step(rng.uniform(env.action_low, env.action_high))
            if terminated or truncated:
                env.reset()
    return (time.perf_counter() - started) / steps


def _time_learner(vracer: HostVRacer, state, batch, steps: int, between=None) -> float:
    """Seconds per jitted call (update + act), blocked per call; ``between()``, if given, runs between calls
    untimed (the environment steps of the loop), so the calls are timed as the loop makes them: not back to back."""
    host, learner, keys = state.host, state.learner, state.keys
    obs = vracer._standardise(host, host.obs)
    beta = np.asarray(host.beta)
    seconds = 0.0
    for _ in range(steps):
        if between is not None:
            between()
        started = time.perf_counter()
        learner, out, pending, keys = vracer._step(learner, batch, beta, 4.0, 1e-4, obs, keys)
        # the serial loop needs each step's actions (and V, rho) on the host before it can go on: block per call
        jax.block_until_ready((out, pending))
        seconds += time.perf_counter() - started
    return seconds / steps


def _time_end_to_end(vracer: HostVRacer, state, steps: int):
    started = time.perf_counter()
    state, metrics = vracer.run(state, steps)
    jax.block_until_ready(state.learner)
    return (time.perf_counter() - started) / steps, state


def bench(env: str, seeds: int, steps: int, rounds: int, batch_size: int, n_start: int) -> dict[str, float]:
    """Seconds per lockstep step of each part (medians over rounds) and the derived rates."""
    config = VRacerConfig(rules=ReferConfig(variant="refer"), capacity=2**15, n_start=n_start, batch_size=batch_size)
    spec = _env_spec(env)
    vracer = HostVRacer(config, spec)
    state = vracer.init(list(range(seeds)))
    state, _ = vracer.run(state, n_start + 2)  # warm-up: fill N_start, compile the update
    sample = state.host.bank.sample(batch_size)
    batch = vlearner.Batch(*(getattr(sample, f) for f in ("obs", "action", "mu_mean", "mu_std", "q_ret")))
    envs = [MujocoHostEnv(spec, seed=100 + i) for i in range(seeds)]
    for env in envs:
        env.reset()
    rng = np.random.default_rng(0)
    _time_learner(vracer, state, batch, 2)
    parts: dict[str, list[float]] = {"env": [], "learner": [], "learner_env_between": [], "end_to_end": []}
    # the main thread's CPU time per step of each part: a shared machine's load stretches wall time (waiting for a
    # core) far more than CPU time, so the host work's CPU (end to end minus env minus the call's dispatch and fetch)
    # compares codes where the wall-time ratio cannot
    cpu: dict[str, list[float]] = {"env": [], "learner": [], "end_to_end": []}
    for _ in range(rounds):
        started = time.thread_time()
        parts["env"].append(_time_env(envs, rng, steps))
        cpu["env"].append((time.thread_time() - started) / steps)
        started = time.thread_time()
        parts["learner"].append(_time_learner(vracer, state, batch, steps))
        cpu["learner"].append((time.thread_time() - started) / steps)
        parts["learner_env_between"].append(_time_learner(vracer, state, batch, steps, lambda: _time_env(envs, rng, 1)))
        started = time.thread_time()
        seconds, state = _time_end_to_end(vracer, state, steps)
        cpu["end_to_end"].append((time.thread_time() - started) / steps)
        parts["end_to_end"].append(seconds)
    t = {name: statistics.median(values) for name, values in parts.items()}
    c = {name: statistics.median(values) for name, values in cpu.items()}
    allowed = 1.0 / (t["env"] + t["learner"])
    return {
        "env_cpu_ms": c["env"] * 1e3,
        "learner_cpu_ms": c["learner"] * 1e3,
        "end_to_end_cpu_ms": c["end_to_end"] * 1e3,
        "host_cpu_ms": (c["end_to_end"] - c["env"] - c["learner"]) * 1e3,
        "env_steps_per_s": 1.0 / t["env"],
        "learner_updates_per_s": 1.0 / t["learner"],
        "learner_call_ms": t["learner"] * 1e3,
        "learner_call_env_between_ms": t["learner_env_between"] * 1e3,
        "host_ms": (t["end_to_end"] - t["env"] - t["learner_env_between"]) * 1e3,
        "allowed_steps_per_s": allowed,
        "end_to_end_steps_per_s": 1.0 / t["end_to_end"],
        "ratio": (1.0 / t["end_to_end"]) / allowed,
    }


def bench_memory(capacity: int, batch_size: int, repeats: int, rounds: int) -> dict[str, float]:
    """Seconds per step of the far-fraction bookkeeping of one seed's full memory of ``capacity`` steps: a recount
    of every stored ratio (what the loop did before n_far was kept) beside the O(B) update of the count after a
    write-back of B sampled ratios (what it does now), side by side."""
    replay = EpisodeReplay(capacity, 1000, 1, 1, 0.995, 0)
    for _ in range(capacity // 1000 + 1):
        for _ in range(1000):
            replay.add(np.zeros(1), np.zeros(1), 1.0, np.zeros(1), np.ones(1), 0.0)
        replay.end_episode(np.zeros(1), False, 0.0)
    rng = np.random.default_rng(0)
    replay.set_log_rho(replay.stored(), rng.normal(0.0, 0.5, replay.committed).astype(np.float32), 2.0)
    index, log_rho = replay.sample(batch_size).index, rng.normal(0.0, 0.5, batch_size).astype(np.float32)

    def recount(_):
        replay.recount_far(2.0)
        return replay.far_fraction()

    def incremental(_):
        replay.set_log_rho(index, log_rho, 2.0)
        return replay.far_fraction()

    timings = compare_calls({"recount": (recount, None), "incremental": (incremental, None)}, repeats, rounds)
    return {name: timing.seconds_per_call for name, timing in timings.items()} | {"stored": replay.committed}


def bench_priority(capacity: int, batch_size: int, sort_period: int, repeats: int, rounds: int) -> dict[str, float]:
    """Seconds per step of drawing a minibatch from one seed's full memory of ``capacity`` steps and writing the
    sampled steps' new |TD errors| back: uniform sampling (ER) beside rank-based PER re-ranking every
    ``sort_period`` updates (the spec's value) and every update, side by side. ``repeats`` is a multiple of the
    period, so each PER timing includes its share of the re-ranking merges."""
    memories = {}
    for name, period in (("uniform", None), ("per", sort_period), ("per_every_step", 1)):
        replay = EpisodeReplay(capacity, 1000, 1, 1, 0.995, 0, None if period is None else (0.7, period))
        for _ in range(capacity // 1000 + 1):
            for _ in range(1000):
                replay.add(np.zeros(1), np.zeros(1), 1.0, np.zeros(1), np.ones(1), 0.0)
            replay.end_episode(np.zeros(1), False, 0.0)
        if period is not None:
            replay.update_priorities(replay.stored(), np.random.default_rng(1).exponential(size=replay.committed))
            replay.sample(batch_size)  # the first full ranking (once per memory, not per step)
        memories[name] = replay
    rng = np.random.default_rng(0)

    def step(replay: EpisodeReplay):
        def call(_):
            sample = replay.sample(batch_size, 0.7)
            if replay.priorities is not None:
                replay.update_priorities(sample.index, rng.exponential(size=batch_size))
            return sample.weight
        return call

    timings = compare_calls({name: (step(replay), None) for name, replay in memories.items()}, repeats, rounds)
    return {name: timing.seconds_per_call for name, timing in timings.items()} | {"stored": memories["per"].committed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench refer", description=__doc__)
    parser.add_argument("--env", default="InvertedPendulum-v5", help="gymnasium MuJoCo id")
    parser.add_argument("--seeds", type=int, default=3, help="seeds stepped in lockstep (one vmapped update)")
    parser.add_argument("--steps", type=int, default=500, help="lockstep steps per round and part")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians)")
    parser.add_argument("--batch-size", type=int, default=256, help="B (App. A: 256)")
    parser.add_argument("--n-start", type=int, default=2000, help="warm-up steps before the first update")
    parser.add_argument("--memory", type=int, default=0, metavar="N",
                        help="instead: time the far-fraction bookkeeping of one full memory of N steps (paper: 262144)")
    parser.add_argument("--per", type=int, default=0, metavar="N",
                        help="instead: time rank-based PER's sampling and priority update on one full memory of N steps (paper: 262144)")
    parser.add_argument("--sort-period", type=int, default=10, help="with --per: updates between re-rankings (spec default 10)")
    args = parser.parse_args(argv)

    def say(text: str, indent: str = "") -> None:  # prose in 80 columns
        print("\n".join(wrap(text, indent)))

    if args.per:
        period = args.sort_period
        m = bench_priority(args.per, args.batch_size, period, repeats=10 * period, rounds=args.rounds)
        say(f"minibatch draw + priority write-back per step, one seed, {m['stored']:,} stored steps, B = "
            f"{args.batch_size} ({args.rounds} interleaved rounds, medians)")
        print(f"  uniform (ER)                          {m['uniform'] * 1e3:8.3f} ms")
        print(f"  rank-based PER, re-rank every {period:<3d}     {m['per'] * 1e3:8.3f} ms")
        print(f"  rank-based PER, re-rank every update  {m['per_every_step'] * 1e3:8.3f} ms")
        return 0
    if args.memory:
        m = bench_memory(args.memory, args.batch_size, repeats=20, rounds=args.rounds)
        say(f"far-fraction bookkeeping per step, one seed, {m['stored']:,} stored steps, B = {args.batch_size} "
            f"({args.rounds} interleaved rounds, medians)")
        print(f"  recount of the whole memory  {m['recount'] * 1e3:8.3f} ms")
        print(f"  incremental n_far (O(B))     {m['incremental'] * 1e3:8.3f} ms")
        print(f"  ratio recount / incremental = {m['recount'] / m['incremental']:.0f}")
        return 0
    r = bench(args.env, args.seeds, args.steps, args.rounds, args.batch_size, args.n_start)
    s = args.seeds
    say(f"V-RACER + ReF-ER on {args.env}, {s} seeds in lockstep, B = {args.batch_size}, {args.rounds} interleaved "
        f"rounds of {args.steps} steps (medians); JAX {jax.__version__}, {jax.device_count()} CPU device(s)")
    rows = (("env only", r["env_steps_per_s"], "lockstep steps/s", "env steps/s"),
            ("learner only", r["learner_updates_per_s"], "calls/s         ", "updates/s"),
            ("parts allow", r["allowed_steps_per_s"], "lockstep steps/s", None),
            ("end to end", r["end_to_end_steps_per_s"], "lockstep steps/s", "env steps/s"))
    for label, rate, unit, each in rows:
        tail = "(1 / (t_env + t_learner))" if each is None else f"({rate * s:8.1f} {each})"
        print(f"  {label:12s}  {rate:8.1f} {unit} {tail}")
    print(f"  ratio end-to-end / allowed = {r['ratio']:.2f} (goal >= 0.8)")
    say(f"where the gap is: the jitted call (update + act) takes {r['learner_call_ms']:.2f} ms back to back and "
        f"{r['learner_call_env_between_ms']:.2f} ms with the environments stepped between calls (as in the loop); "
        f"the loop's own host work (sampling, write-back, transfers) is the remaining {r['host_ms']:.2f} ms per step",
        "  ")
    say(f"main thread's CPU per step (less disturbed by a loaded machine than wall time): env "
        f"{r['env_cpu_ms']:.3f} ms, the call's dispatch and fetch {r['learner_cpu_ms']:.3f} ms, end to end "
        f"{r['end_to_end_cpu_ms']:.3f} ms, so the host work is {r['host_cpu_ms']:.3f} ms of CPU (part of it, the "
        f"write-back's gathers, runs while the call does)", "  ")
    say(f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}; load average {os.getloadavg()[0]:.1f}", "  ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
