"""IMPALA on Atari: environment-only, learner-only and end-to-end frames/s on the same cores, in one run.

- env only: ale-py's vector environment with random actions (the actors' emulator work alone);
- learner only: updates on one fixed batch of T x B transitions (compile excluded);
- end to end: the real actor-learner (threaded actors, or ``--mode sync`` / ``a2c_sync_traj`` / ``a3c``, Table 1's
  other single-machine organisations) for a few chunks, after warm-up; ``--table1``: all four organisations, each
  end to end on the same cores and environments, beside Table 1's CPU-only rows.
``--actor-device cpu`` runs the actors' policy on the host CPU instead of the learner's device (on a GPU machine:
no host-device round trip per acting step; ``rlrepro.training.placement``).
Acting and learning share the cores, so together they allow ``1 / (1/env + 1/learner)`` frames/s;
the ratio compares end to end with that (goal: 0.8 or more with the shallow network on 2 cores).
Runs unchanged on a GPU machine (the learner then uses the accelerator).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time

import jax
import numpy as np

from rlrepro.agents.impala.host_trainer import HostImpalaTrainer
from rlrepro.training.actor_learner import batch_from_unrolls
from rlrepro.agents.impala.build import impala_config
from rlrepro.environments.atari import AtariEnv
from rlrepro.plan_text import wrap
from rlrepro.specs import load_spec
from rlrepro.specs.agents.impala import ActorSpec
from rlrepro.training.actor_learner import ONE_ENV_PER_ACTOR, play_unroll, start_actor
from rlrepro.training.placement import ACTOR_DEVICE_ENV, ACTOR_DEVICES, actor_device_setting


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


# Table 1's CPU-only single-machine organisations: (our mode, policy lag, one environment per actor, the paper's row).
TABLE1 = (
    ("a3c", 0, True, "A3C 32 workers"),
    ("sync", 0, False, "Batched A2C (sync step)"),
    ("a2c_sync_traj", 0, True, "Batched A2C (sync traj.)"),
    ("threaded", 0, True, "IMPALA 48 actors"),
)


def paper_table1() -> dict[str, tuple[str, str]]:
    """Table 1's CPU-only single-machine rows: architecture -> (task 1, task 2) frames/s as the paper prints them."""
    import csv
    from importlib import resources

    with resources.files("rlrepro.data").joinpath("impala_table1_throughput.csv").open() as file:
        rows = [r for r in csv.DictReader(file) if r["setting"] == "single-machine" and r["gpus"] == "0"]
    return {r["architecture"]: (r["fps_task1_verbatim"], r["fps_task2_verbatim"]) for r in rows}


def table1(config, env_spec, updates_per_chunk: int, chunks: int) -> list[str]:
    """End-to-end frames/s of the four organisations on the same cores and environments, beside Table 1's rows.

    A3C and sync traj. (and IMPALA here, as the paper's 48 actors) give every worker/actor one environment: batch-1
    forward passes (A3C: batch-1 backward passes too); sync step steps all of them with one batched forward pass.
    """
    paper = paper_table1()
    lines = [f"  {'ours: mode x actors':19s} {'frames/s':>10s}  {'Table 1 row':25s} {'task 1':>6s} {'task 2':>6s}"]
    for mode, lag, one_env_each, paper_row in TABLE1:
        actors = env_spec.num_envs if one_env_each else 1
        trainer = HostImpalaTrainer(dataclasses.replace(config, policy_lag=lag), env_spec, ActorSpec(mode=mode, num_actors=actors),
                                    updates_per_chunk=updates_per_chunk)  # fmt: skip
        fps, _ = end_to_end(trainer, chunks)
        task1, task2 = paper[paper_row]
        lines.append(f"  {f'{mode} x{actors}':19s} {fps:10,.0f}  {paper_row:25s} {task1:>6s} {task2:>6s}")
    return lines


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
    parser.add_argument("--num-actors", type=int, default=None, metavar="N",
                        help="actors sharing the spec's envs (default 1; a3c and a2c_sync_traj: one per env)")
    parser.add_argument("--envs", type=int, default=None, metavar="N",
                        help="replace the spec's num_envs and batch_size by N (a small run: --envs 4)")
    parser.add_argument("--unroll-length", type=int, default=None, metavar="T", help="replace the spec's unroll length")
    parser.add_argument("--table1", action="store_true",
                        help="end to end for all four organisations of Table 1, printed beside the paper's rows")
    parser.add_argument("--chunks", type=int, default=3, metavar="N", help="end to end: chunks timed after warm-up")
    parser.add_argument("--updates-per-chunk", type=int, default=10, metavar="N",
                        help="updates per chunk (learner only: as many, at least 2)")
    parser.add_argument("--env-seconds", type=float, default=10.0, metavar="S", help="env only: seconds stepped")
    parser.add_argument("--end-to-end-only", action="store_true",
                        help="skip env only and learner only (a second placement of a run whose parts are measured)")
    parser.add_argument("--actor-device", choices=ACTOR_DEVICES, default=None, metavar="WHERE",
                        help=f"where the actors' policy runs: learner (the learner's first device) or cpu (the host "
                             f"CPU); default ${ACTOR_DEVICE_ENV}, else learner")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures to PATH (JSON)")
    args = parser.parse_args(argv)
    if args.actor_device:  # the placement setting a training job reads (rlrepro.training.placement)
        os.environ[ACTOR_DEVICE_ENV] = args.actor_device
    actor_device = actor_device_setting()

    spec = load_spec(args.spec)
    env_spec = next(e for e in spec.environments if e.id == args.game)
    agent = spec.agent
    if args.envs:
        env_spec = env_spec.model_copy(update={"num_envs": args.envs})
        agent = agent.model_copy(update={"batch_size": args.envs})
    if args.unroll_length:
        agent = agent.model_copy(update={"unroll_length": args.unroll_length})
    if args.network:
        network = {"kind": args.network, "fc_size": 256, "lstm_size": None}
        agent = agent.model_validate({**agent.model_dump(), "network": network})
    config = impala_config(agent, total_updates=10**9)
    if (args.table1 or args.mode in ONE_ENV_PER_ACTOR) and config.batch_size != env_spec.num_envs:
        parser.error(f"--mode {args.mode}: the spec's batch_size ({config.batch_size}) must equal num_envs ({env_spec.num_envs})")
    if args.table1:
        print("\n".join(wrap(f"IMPALA Table 1 benchmark: {args.game}, {agent.network.kind}, B={config.batch_size}, "
                              f"T={config.unroll_length}, {env_spec.num_envs} envs, devices {jax.devices()}")))
        print("\n".join(table1(config, env_spec, args.updates_per_chunk, args.chunks)))
        return 0
    num_actors = args.num_actors or (env_spec.num_envs if args.mode in ONE_ENV_PER_ACTOR else 1)
    actor = ActorSpec(mode=args.mode, num_actors=num_actors)
    trainer = HostImpalaTrainer(config, env_spec, actor, updates_per_chunk=args.updates_per_chunk)
    setting = (f"IMPALA Atari benchmark: {args.game}, {agent.network.kind}, B={config.batch_size}, "
               f"T={config.unroll_length}, {env_spec.num_envs} envs, actors {args.mode} x{num_actors} acting on "
               f"{actor_device} ({trainer.actor_device}), devices {jax.devices()}")
    print("\n".join(wrap(setting)))
    env_fps = learner_fps = allowed = None
    if not args.end_to_end_only:
        env_fps = env_only(env_spec, args.env_seconds)
        print(row("env only (random actions)", env_fps, "frames/s"))
        learner_fps = learner_only(trainer, repeats=max(2, args.updates_per_chunk))
        print(row("learner only (fixed batch)", learner_fps, "frames/s"))
        allowed = 1.0 / (1.0 / env_fps + 1.0 / learner_fps)
        bound = min(env_fps, learner_fps)
        print(row("parts together (shared cores)", allowed, "frames/s", f"(parallel bound {bound:,.0f})"))
    e2e, lag = end_to_end(trainer, args.chunks)
    print(row("end to end", e2e, "frames/s", "" if allowed is None else f"ratio to parts {e2e / allowed:4.2f}"))
    print(row("policy lag (end to end)", lag, "updates", figure=".2f"))
    if args.json:
        figures = {"env_only": env_fps, "learner_only": learner_fps, "parts_together": allowed, "end_to_end": e2e,
                   "policy_lag": lag, "network": agent.network.kind, "batch_size": config.batch_size,
                   "unroll_length": config.unroll_length, "num_envs": env_spec.num_envs, "mode": args.mode,
                   "num_actors": args.num_actors, "actor_device": actor_device,
                   "devices": [str(d) for d in jax.devices()]}
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=1)
    return 0
