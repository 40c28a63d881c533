"""Continuous ACER speed: environment-only, learner-only and end-to-end steps/s on the same cores, their ratio, and
what one gradient step costs per seed at App. A's batch (24 windows x 200 steps) and at the cpu scale's (8 x 8).

``python -m rlrepro.bench acer [--env InvertedPendulum-v5] [--seeds 3] [--steps 100] [--rounds 3]
[--batch-episodes 24] [--window 200] [--n-start 1000]``

Like V-RACER's host loop (``rlrepro.bench.refer``) the loop is serial with one gradient step per environment step:
per lockstep step every seed's environment steps, then one jitted call makes every seed's update and next action,
so the parts allow 1 / (t_env + t_learner) steps/s; the end-to-end loop adds the window sampling and the transfer
of the [seeds, B, L] batch. The learner is timed on one fixed batch, blocked per call; parts in interleaved rounds
(medians). The batch has a fixed shape (padded windows cost as much as full ones), so the learner figure does not
depend on the task's episode lengths.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import numpy as np

from rlrepro.agents.acer.config import ACERConfig
from rlrepro.agents.acer.loop import HostACER
from rlrepro.bench.refer import _env_spec, _time_env
from rlrepro.environments.mujoco import MujocoHostEnv
from rlrepro.plan_text import wrap


def _time_learner(acer: HostACER, state, batch, steps: int) -> float:
    """Seconds per jitted call (every seed's update + next action), blocked per call as the serial loop needs."""
    host, learner, keys = state.host, state.learner, state.keys
    obs = acer._standardise(host, host.obs)
    seconds = 0.0
    for _ in range(steps):
        started = time.perf_counter()
        learner, metrics, pending, keys = acer._step(learner, batch, obs, keys, 1e-5, 1e-4, 1e-4)
        jax.block_until_ready((metrics, pending))
        seconds += time.perf_counter() - started
    return seconds / steps


def bench(env: str, seeds: int, steps: int, rounds: int, batch_episodes: int, window: int, n_start: int) -> dict[str, float]:
    """Seconds per lockstep step of each part (medians over rounds) and the derived rates."""
    config = ACERConfig(capacity=100_000, n_start=n_start, batch_episodes=batch_episodes, window=window)
    spec = _env_spec(env)
    acer = HostACER(config, spec)
    state = acer.init(list(range(seeds)))
    state, _ = acer.run(state, n_start + 2)  # warm-up: fill N_start, compile the update
    batch = acer._batch(state.host)
    envs = [MujocoHostEnv(spec, seed=100 + i) for i in range(seeds)]
    for e in envs:
        e.reset()
    rng = np.random.default_rng(0)
    _time_learner(acer, state, batch, 2)
    parts: dict[str, list[float]] = {"env": [], "learner": [], "end_to_end": []}
    for _ in range(rounds):
        parts["env"].append(_time_env(envs, rng, steps))
        parts["learner"].append(_time_learner(acer, state, batch, steps))
        started = time.perf_counter()
        state, _ = acer.run(state, steps)
        jax.block_until_ready(state.learner)
        parts["end_to_end"].append((time.perf_counter() - started) / steps)
    t = {name: statistics.median(values) for name, values in parts.items()}
    allowed = 1.0 / (t["env"] + t["learner"])
    return {
        "env_steps_per_s": 1.0 / t["env"],
        "learner_calls_per_s": 1.0 / t["learner"],
        "learner_ms_per_seed_step": t["learner"] / seeds * 1e3,
        "allowed_steps_per_s": allowed,
        "end_to_end_steps_per_s": 1.0 / t["end_to_end"],
        "ratio": (1.0 / t["end_to_end"]) / allowed,
    }


def report(r: dict[str, float], env: str, seeds: int, batch_episodes: int, window: int, rounds: int,
           steps: int) -> list[str]:
    """``bench``'s figures for an 80-column terminal: the setting as wrapped prose, then one aligned row per part."""
    setting = (f"ACER on {env}, {seeds} seeds in lockstep, {batch_episodes} windows x {window} steps per gradient, "
               f"{rounds} interleaved rounds of {steps} steps (medians); JAX {jax.__version__}, "
               f"{jax.device_count()} CPU device(s)")
    env_steps, e2e_steps = r["env_steps_per_s"] * seeds, r["end_to_end_steps_per_s"] * seeds
    rows = [
        ("env only", r["env_steps_per_s"], "lockstep steps/s", f"{env_steps:.1f} env steps/s"),
        ("learner (update + act)", r["learner_calls_per_s"], "calls/s",
         f"{r['learner_ms_per_seed_step']:.2f} ms per seed-step"),
        ("parts allow (serial)", r["allowed_steps_per_s"], "lockstep steps/s", "1 / (t_env + t_learner)"),
        ("end to end", r["end_to_end_steps_per_s"], "lockstep steps/s", f"{e2e_steps:.1f} env steps/s"),
    ]  # fmt: skip
    return [
        *wrap(setting),
        *(f"  {label:22s} {rate:9.1f} {unit:16s}  ({note})" for label, rate, unit, note in rows),
        f"  ratio end-to-end / allowed = {r['ratio']:.2f} (goal >= 0.8)",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench acer", description=__doc__)
    parser.add_argument("--env", default="InvertedPendulum-v5", help="gymnasium MuJoCo id")
    parser.add_argument("--seeds", type=int, default=3, help="seeds stepped in lockstep (one vmapped update)")
    parser.add_argument("--steps", type=int, default=100, help="lockstep steps per round and part")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians)")
    parser.add_argument("--batch-episodes", type=int, default=24, help="windows per gradient (App. A: 24 episodes)")
    parser.add_argument("--window", type=int, default=200, help="steps per window (smarties: 200; cpu scale: 8)")
    parser.add_argument("--n-start", type=int, default=1000, help="warm-up steps before the first update")
    args = parser.parse_args(argv)
    r = bench(args.env, args.seeds, args.steps, args.rounds, args.batch_episodes, args.window, args.n_start)
    print("\n".join(report(r, args.env, args.seeds, args.batch_episodes, args.window, args.rounds, args.steps)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
