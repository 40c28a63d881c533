"""IMPALA+SR learner throughput beside plain IMPALA's on the same batch: frames/s and their ratio.

One Chain batch (T x B steps from the SR actor, initial parameters) is fed to four jitted updates, timed
side by side in interleaved rounds (``compare_calls``): IMPALA's own learner (``rlrepro.agents.impala``,
same MLP torso), the SR agent's learner as the baseline (alpha 0, no SR loss), the SR learner, and the SR
learner with a 2,000-slot memory per stream (Skiing's capacity) to show what re-evaluating c over the
memory costs. Frames = agent steps (no action repeat on the Chain).
"""

from __future__ import annotations

import argparse
import functools

import jax
import jax.numpy as jnp

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.agents.impala.learner import Batch, make_learner as make_impala_learner
from rlrepro.agents.impala_sr.actor import init_actor, unroll
from rlrepro.agents.impala_sr.config import ImpalaSRConfig, SRConfig
from rlrepro.agents.impala_sr.learner import SRBatch, make_learner
from rlrepro.agents.impala_sr.networks import make_sr_network
from rlrepro.bench.timing import compare_calls
from rlrepro.environments.jax_envs import Chain
from rlrepro.losses.synthetic_returns import EpisodicMemory


def _configs(batch_size: int, unroll_length: int, capacity: int) -> dict[str, ImpalaSRConfig]:
    impala = ImpalaConfig(unroll_length=unroll_length, batch_size=batch_size, hidden_sizes=(128,), reward_clip=None)
    return {
        "sr_baseline": ImpalaSRConfig(impala, SRConfig(enabled=False, alpha=0.0, memory_capacity=capacity), lstm_size=None),
        "sr": ImpalaSRConfig(impala, SRConfig(alpha=0.3, memory_capacity=capacity), lstm_size=None),
    }


def chain_batch(config: ImpalaSRConfig, unrolls: int = 3) -> SRBatch:
    """A batch from the SR actor on the Chain after ``unrolls`` unrolls (so the memory holds earlier states)."""
    env = Chain()
    network = make_sr_network(config, env.num_actions)
    params = make_learner(config, env.observation_shape, env.num_actions).init(jax.random.key(0)).params
    state = init_actor(jax.random.key(1), env, network, config)
    run = jax.jit(functools.partial(unroll, env=env, network=network, unroll_length=config.impala.unroll_length))
    for k in range(unrolls):
        state, batch, _ = run(jax.random.key(10 + k), params, state)
    return batch


def with_capacity(batch: SRBatch, capacity: int) -> SRBatch:
    """The same batch with a ``capacity``-slot memory per stream, every slot filled (counter >= capacity)."""
    values = batch.initial_memory.values
    tiled = jnp.resize(values, (values.shape[0], capacity, values.shape[2]))
    return batch._replace(initial_memory=EpisodicMemory(tiled, jnp.full_like(batch.initial_memory.counter, capacity)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench impala-sr", description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--unroll", type=int, default=12)
    parser.add_argument("--big-capacity", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    env = Chain()
    configs = _configs(args.batch_size, args.unroll, capacity=12)
    big = _configs(args.batch_size, args.unroll, capacity=args.big_capacity)["sr"]
    batch = chain_batch(configs["sr"])
    impala_batch = Batch(batch.observations, batch.actions, batch.rewards, batch.dones, batch.behaviour_logits)
    impala = make_impala_learner(configs["sr"].impala, env.observation_shape, env.num_actions)
    steps = {"impala": (jax.jit(lambda s: impala.update(s, impala_batch)[0]), impala.init(jax.random.key(0)))}
    for name, config, data in (("sr_baseline", configs["sr_baseline"], batch), ("sr", configs["sr"], batch),
                               (f"sr_memory{args.big_capacity}", big, with_capacity(batch, args.big_capacity))):
        learner = make_learner(config, env.observation_shape, env.num_actions)
        steps[name] = (jax.jit(lambda s, learner=learner, data=data: learner.update(s, data)[0]),
                       learner.init(jax.random.key(0)))
    timings = compare_calls(steps, repeats=args.repeats, rounds=args.rounds)
    frames = args.unroll * args.batch_size
    print(f"IMPALA+SR learner update on the Chain, B={args.batch_size}, T={args.unroll}, devices {jax.local_devices()}")
    print("(timed side by side in interleaved rounds; the machine may be shared: read the ratios)")
    base = frames / timings["impala"].seconds_per_call
    for name, timing in timings.items():
        fps = frames / timing.seconds_per_call
        print(f"  {name:18s} {fps:12,.0f} frames/s   ratio to impala {fps / base:5.2f}   (first call {timing.first_call_seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
