"""IMPALA on pure-JAX toy tasks: environment-only, learner-only and end-to-end frames/s, and their ratio.

All three are jitted and measured after compilation, on the same cores, in one process:
- env only: B environments stepped T steps with random actions (``lax.scan`` over steps, vmap over envs);
- learner only: ``update`` on one fixed batch of T x B transitions;
- end to end: the training chunk (act with the lagged parameters, then update), as ``rlrepro train`` runs it.
Acting and learning run one after the other on the same cores, so the two parts together allow
``1 / (1/env + 1/learner)`` frames/s; the ratio compares end to end with that (1.0 = no overhead; the
actor's network forward passes are part of end to end but of neither part, so < 1 is expected).
"""

from __future__ import annotations

import argparse
import json

import jax
import jax.numpy as jnp

from rlrepro.training.unroll import init_actor, unroll
from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.agents.impala.learner import make_learner
from rlrepro.agents.impala.networks import make_network
from rlrepro.bench.timing import time_calls
from rlrepro.environments.jax_envs import make_jax_env
from rlrepro.plan_text import wrap
from rlrepro.agents.impala.loop import make_jax_trainer


def env_only(env_name: str, config: ImpalaConfig, repeats: int) -> float:
    env = make_jax_env(env_name)

    @jax.jit
    def run(key: jax.Array) -> jax.Array:
        keys = jax.random.split(key, config.batch_size)
        states, _ = jax.vmap(env.reset)(keys)

        def step(carry, key):
            states, total = carry
            action_key, step_key = jax.random.split(key)
            actions = jax.random.randint(action_key, (config.batch_size,), 0, env.num_actions)
            states, ts = jax.vmap(env.step)(jax.random.split(step_key, config.batch_size), states, actions)
            return (states, total + jnp.sum(ts.observation) + jnp.sum(ts.reward)), None

        (_, total), _ = jax.lax.scan(step, (states, 0.0), jax.random.split(key, config.unroll_length * 25))
        return total

    seconds = time_calls(lambda _: run(jax.random.key(0)), repeats=repeats).seconds_per_call
    return config.unroll_length * 25 * config.batch_size / seconds


def learner_only(env_name: str, config: ImpalaConfig, repeats: int) -> float:
    env = make_jax_env(env_name)
    learner = make_learner(config, env.observation_shape, env.num_actions)
    state = learner.init(jax.random.key(0))
    actor = init_actor(jax.random.key(1), env, config.batch_size)
    network = make_network(config, env.num_actions)
    batch = unroll(jax.random.key(2), state.params, actor, env=env, network=network, unroll_length=config.unroll_length)[1]

    @jax.jit
    def run(state):
        def body(state, _):
            return learner.update(state, batch)[0], None

        return jax.lax.scan(body, state, None, length=25)[0]

    seconds = time_calls(lambda _: run(state), repeats=repeats).seconds_per_call
    return 25 * config.frames_per_update / seconds


def end_to_end(env_name: str, config: ImpalaConfig, repeats: int, seeds: int) -> float:
    trainer = make_jax_trainer(make_jax_env(env_name), config, updates_per_chunk=25)
    keys = jnp.stack([jax.random.key_data(jax.random.key(s)) for s in range(seeds)])
    state = trainer.init_batch(keys)
    seconds = time_calls(lambda _: trainer.run_chunk_batch(state), repeats=repeats).seconds_per_call
    return seeds * 25 * config.frames_per_update / seconds


def row(label: str, fps: float, note: str = "") -> str:
    """One line of the printout, every line's frames/s in one column; fits 80 columns up to 14 characters of figure
    (99,999,999,999 frames/s)."""
    return f"  {label:29s} {fps:14,.0f} frames/s   {note}".rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench impala-toy", description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="cartpole", choices=("cartpole", "catch"))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--unroll-length", type=int, default=20)
    parser.add_argument("--policy-lag", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 8], metavar="N",
                        help="end to end: seeds vmapped in one chunk, one measurement per N (default: 1 8)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures to PATH (JSON)")
    args = parser.parse_args(argv)
    config = ImpalaConfig(
        batch_size=args.batch_size, unroll_length=args.unroll_length, policy_lag=args.policy_lag, hidden_sizes=(64, 64),
        max_grad_norm=40.0,
    )
    setting = (f"IMPALA toy benchmark: {args.env}, B={config.batch_size}, T={config.unroll_length}, MLP 64x64, "
               f"lag {config.policy_lag}, devices {jax.devices()}")
    print("\n".join(wrap(setting)))
    env_fps = env_only(args.env, config, args.repeats)
    learner_fps = learner_only(args.env, config, args.repeats)
    allowed = 1.0 / (1.0 / env_fps + 1.0 / learner_fps)
    print(row("env only (random actions)", env_fps))
    print(row("learner only (fixed batch)", learner_fps))
    print(row("parts together (sequential)", allowed))
    figures = {"env": args.env, "batch_size": config.batch_size, "unroll_length": config.unroll_length,
               "env_only": env_fps, "learner_only": learner_fps, "parts_together": allowed, "end_to_end": {}}
    for seeds in args.seeds:
        e2e = end_to_end(args.env, config, args.repeats, seeds)
        figures["end_to_end"][str(seeds)] = e2e
        print(row(f"end to end, {seeds} seed(s) vmapped", e2e, f"ratio to parts {e2e / allowed:5.2f}"))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=1)
    return 0
