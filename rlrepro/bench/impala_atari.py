"""IMPALA on Atari: environment-only, learner-only and end-to-end frames/s on the same cores, in one run.

- env only: ale-py's vector environment with random actions (the actors' emulator work alone);
- learner only: updates on one fixed batch of T x B transitions (compile excluded);
- end to end: the real actor-learner (threaded actors, or ``--mode sync`` / ``a2c_sync_traj`` / ``a3c``, Table 1's
  other single-machine organisations) for a few chunks, after warm-up.
Acting and learning share the cores, so together they allow ``1 / (1/env + 1/learner)`` frames/s;
the ratio compares end to end with that (goal: 0.8 or more with the shallow network on 2 cores).
Runs unchanged on a GPU machine (the learner then uses the accelerator).
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np

from rlrepro.agents.impala.host_trainer import HostImpalaTrainer, batch_from_unrolls
from rlrepro.agents.impala.trainer import impala_config
from rlrepro.environments.atari import AtariEnv
from rlrepro.plan_text import wrap
from rlrepro.specs import load_spec
from rlrepro.specs.agents.impala import ActorSpec
from rlrepro.training.actor_learner import play_unroll, start_actor


def env_only(env_spec, seconds: float) -> float:
    env = AtariEnv(env_spec, num_envs=env_spec.num_envs, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(rng.integers(0, env.num_actions, env.num_envs))
        steps += env.num_envs
    env.close()
    return steps * env_spec.action_repeat / (time.perf_counter() - start)


def learner_only(trainer: HostImpalaTrainer, repeats: int) -> float:
    env = AtariEnv(trainer.env_spec, num_envs=trainer.config.batch_size, seed=1)
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    actor = start_actor(env, trainer._initial_core(env.num_envs), jax.random.key(1))
    _, unroll = play_unroll(
        env, trainer.policy_step, trainer._reset_core, state.learner.params, 0, actor, trainer.config.unroll_length
    )
    batch = batch_from_unrolls([unroll])
    learner = state.learner
    learner, _ = trainer.update(learner, batch)  # compile
    jax.block_until_ready(learner)
    start = time.perf_counter()
    for _ in range(repeats):
        learner, _ = trainer.update(learner, batch)
    jax.block_until_ready(learner)
    frames = repeats * trainer.config.frames_per_update * trainer.env_spec.action_repeat
    return frames / (time.perf_counter() - start)


def end_to_end(trainer: HostImpalaTrainer, chunks: int) -> tuple[float, float]:
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    state, _ = trainer.run_chunk(state)  # warm-up: compilation, actors filling the queue
    fps, lags = [], []
    for _ in range(chunks):
        state, metrics = trainer.run_chunk(state)
        fps.append(float(metrics.fps[0]))
        lags.append(float(metrics.policy_lag[0]))
    trainer.stop()
    return float(np.mean(fps)), float(np.mean(lags))


def row(label: str, value: float, unit: str, note: str = "", figure: str = ",.0f") -> str:
    """One line of the printout, the figures of every line in one column: fits 80 columns up to 10 characters of
    figure (99,999,999 frames/s) and a 27-character note."""
    return f"  {label:29s} {value:10{figure}} {unit:8s}  {note}".rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench impala-atari", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="specs/impala/atari57_shallow.yaml", help="IMPALA spec (agent, environments)")
    parser.add_argument("--game", default="pong", help="environment id in the spec")
    parser.add_argument("--network", choices=("impala_shallow", "impala_deep"), default=None, metavar="KIND",
                        help="replace the spec's network: impala_shallow or impala_deep")
    parser.add_argument("--mode", choices=("threaded", "sync", "a2c_sync_traj", "a3c"), default="threaded",
                        metavar="MODE", help="actors: threaded (default), sync, a2c_sync_traj or a3c (Table 1)")
    parser.add_argument("--num-actors", type=int, default=1, metavar="N", help="actors sharing the spec's envs")
    parser.add_argument("--chunks", type=int, default=3, metavar="N", help="end to end: chunks timed after warm-up")
    parser.add_argument("--updates-per-chunk", type=int, default=10, metavar="N",
                        help="updates per chunk (learner only: as many, at least 2)")
    parser.add_argument("--env-seconds", type=float, default=10.0, metavar="S", help="env only: seconds stepped")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures to PATH (JSON)")
    args = parser.parse_args(argv)

    spec = load_spec(args.spec)
    env_spec = next(e for e in spec.environments if e.id == args.game)
    agent = spec.agent
    if args.network:
        network = {"kind": args.network, "fc_size": 256, "lstm_size": None}
        agent = agent.model_validate({**agent.model_dump(), "network": network})
    config = impala_config(agent, total_updates=10**9)
    if args.mode in ("a2c_sync_traj", "a3c") and config.batch_size != env_spec.num_envs:
        parser.error(f"--mode {args.mode}: the spec's batch_size ({config.batch_size}) must equal num_envs ({env_spec.num_envs})")
    actor = ActorSpec(mode=args.mode, num_actors=args.num_actors)
    trainer = HostImpalaTrainer(config, env_spec, actor, updates_per_chunk=args.updates_per_chunk)
    setting = (f"IMPALA Atari benchmark: {args.game}, {agent.network.kind}, B={config.batch_size}, "
               f"T={config.unroll_length}, {env_spec.num_envs} envs, actors {args.mode} x{args.num_actors}, "
               f"devices {jax.devices()}")
    print("\n".join(wrap(setting)))
    env_fps = env_only(env_spec, args.env_seconds)
    print(row("env only (random actions)", env_fps, "frames/s"))
    learner_fps = learner_only(trainer, repeats=max(2, args.updates_per_chunk))
    print(row("learner only (fixed batch)", learner_fps, "frames/s"))
    allowed = 1.0 / (1.0 / env_fps + 1.0 / learner_fps)
    bound = min(env_fps, learner_fps)
    print(row("parts together (shared cores)", allowed, "frames/s", f"(parallel bound {bound:,.0f})"))
    e2e, lag = end_to_end(trainer, args.chunks)
    print(row("end to end", e2e, "frames/s", f"ratio to parts {e2e / allowed:4.2f}"))
    print(row("policy lag (end to end)", lag, "updates", figure=".2f"))
    if args.json:
        figures = {"env_only": env_fps, "learner_only": learner_fps, "parts_together": allowed, "end_to_end": e2e,
                   "policy_lag": lag, "network": agent.network.kind, "batch_size": config.batch_size,
                   "unroll_length": config.unroll_length, "num_envs": env_spec.num_envs, "mode": args.mode,
                   "num_actors": args.num_actors, "devices": [str(d) for d in jax.devices()]}
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=1)
    return 0
