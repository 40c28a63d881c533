"""FRODO's meta-update beside the plain IMPALA update on the same batches and cores (frames/s, ratio, breakdown).

Atari-shaped batches (T = 30, B = 30, uint8 [4, 84, 84] observations as ALE gives them, FRODO's two-conv torso of Table 1, 6 actions),
or Catch-shaped (MLP 256x256). Measured after compilation, one process:
- IMPALA: one V-trace update (FRODO's code path with ``target: vtrace``: M inner V-trace updates, no meta step);
- FRODO: one meta-update (M inner updates towards G_eta, outer V-trace loss, meta-gradient through all M);
- breakdown: the forward pass of the M inner updates alone (no meta-gradient) and the meta-net forward.
frames/s count the (M + 1) x T x B transitions a meta-update consumes (x4 frames per step on Atari).
"""

from __future__ import annotations

import argparse
import functools
import json

import jax
import jax.numpy as jnp

from rlrepro.agents.frodo.config import FrodoConfig, OptimizerConfig
from rlrepro.agents.frodo.learner import Trajectory, init, make_networks, meta_objective, meta_update
from rlrepro.bench.timing import time_calls


def _config(kind: str, target: str, inner_steps: int, batch: int, unroll: int) -> FrodoConfig:
    common = dict(task="actor_critic", optimizer=OptimizerConfig(1e-3, decay=0.99, epsilon=0.1),
                  meta_optimizer=OptimizerConfig(5e-4, decay=0.99, epsilon=0.1), meta_hidden_size=256,
                  unroll_length=unroll, batch_size=batch, discount=0.99, outer="vtrace", target=target,
                  inner_steps=inner_steps, consistency_weight=0.1)
    if kind == "atari":
        return FrodoConfig(network="frodo_conv", meta_inputs=("reward", "discount", "v_next", "pi_a", "mu_a", "torso"), **common)
    return FrodoConfig(network="mlp", hidden_sizes=(256, 256), meta_inputs=("reward", "discount", "v_next"), **common)


def _batches(key: jax.Array, n: int, obs_shape: tuple[int, ...], num_actions: int, config: FrodoConfig) -> Trajectory:
    T, B = config.unroll_length, config.batch_size
    k1, k2, k3 = jax.random.split(key, 3)
    obs = jax.random.randint(k1, (n, T + 1, B, *obs_shape), 0, 255).astype(jnp.uint8 if len(obs_shape) == 3 else jnp.float32)
    return Trajectory(obs, jax.random.randint(k2, (n, T, B), 0, num_actions), jax.random.normal(k3, (n, T, B)),
                      jnp.full((n, T, B), config.discount), jnp.zeros((n, T, B, num_actions)))


def measure(kind: str, inner_steps: int, batch: int, unroll: int, repeats: int) -> dict[str, float]:
    obs_shape, num_actions = ((4, 84, 84), 6) if kind == "atari" else ((6, 11), 3)
    results = {}
    for name, target in (("impala", "vtrace"), ("frodo", "meta_network")):
        config = _config(kind, target, inner_steps, batch, unroll)
        nets = make_networks(config, num_actions)
        state = init(config, jax.random.key(0), obs_shape, num_actions)
        trajs = _batches(jax.random.key(1), inner_steps + 1, obs_shape, num_actions, config)

        def collect(key, params, i):
            return i + 1, jax.tree.map(lambda x: x[i], trajs), jnp.zeros(())

        probe = lambda p, s: jnp.zeros(())
        update = jax.jit(functools.partial(meta_update, config=config, nets=nets, collect_inner=collect,
                                           collect_outer=collect, probe=probe))
        results[name] = time_calls(lambda _: update(state, 0, jax.random.key(2)), repeats=repeats).seconds_per_call
        if name == "frodo":
            forward = jax.jit(lambda eta: meta_objective(eta, state, 0, jax.random.key(2), config, nets, collect, collect, probe)[0])
            results["frodo_forward_only"] = time_calls(lambda _: forward(state.meta_params), repeats=repeats).seconds_per_call
    steps = (inner_steps + 1) * unroll * batch * (4 if kind == "atari" else 1)
    return {k: steps / v for k, v in results.items()} | {"seconds_" + k: v for k, v in results.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench frodo", description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="atari", choices=("atari", "catch"))
    parser.add_argument("--inner-steps", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=30)
    parser.add_argument("--unroll-length", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures to PATH (JSON)")
    args = parser.parse_args(argv)
    print(f"FRODO vs IMPALA update: {args.kind}, M={args.inner_steps}, B={args.batch_size}, T={args.unroll_length}, "
          f"devices {jax.devices()}")
    r = measure(args.kind, args.inner_steps, args.batch_size, args.unroll_length, args.repeats)
    print(f"  IMPALA: M+1 batches, M V-trace updates    {r['impala']:12,.0f} frames/s  ({r['seconds_impala']:.3f} s)")
    print(f"  FRODO meta-update (with meta-gradient)   {r['frodo']:12,.0f} frames/s  ({r['seconds_frodo']:.3f} s)")
    print(f"  FRODO forward only (inner updates, outer) {r['frodo_forward_only']:12,.0f} frames/s  ({r['seconds_frodo_forward_only']:.3f} s)")
    print(f"  ratio FRODO / IMPALA                     {r['frodo'] / r['impala']:12.2f}")
    print(f"  meta-gradient share of FRODO's time      {1 - r['seconds_frodo_forward_only'] / r['seconds_frodo']:12.0%}")
    if args.json:
        setting = {"kind": args.kind, "inner_steps": args.inner_steps, "batch_size": args.batch_size,
                   "unroll_length": args.unroll_length}
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(setting | r, handle, indent=1)
    return 0
