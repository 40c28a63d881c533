"""IMPALA+SR learner throughput beside plain IMPALA's on the same batch: frames/s and their ratio.

One Chain batch (T x B steps from the SR actor, initial parameters) is fed to four jitted updates, timed
side by side in interleaved rounds (``compare_calls``): IMPALA's own learner (``rlrepro.agents.impala``,
same MLP torso), the SR agent's learner as the baseline (alpha 0, no SR loss), the SR learner, and the SR
learner with a 2,000-slot memory per stream (Skiing's capacity) to show what re-evaluating c over the
memory costs. Frames = agent steps (no action repeat on the Chain).

The Atari-shaped case (``--atari-batch 0`` skips it): one batch of uint8 frames ``[T + 1, B, 4, 84, 84]`` (random
pixels: the cost does not depend on them) with a full 2,000-slot memory per stream, fed to IMPALA's own learner
(nature 3-conv torso + LSTM 256, its Atari path), the SR agent's baseline (the paper's Atari ConvNet + LSTM 256,
alpha 0, no SR loss), and the SR update with Skiing's settings (two-stage loss, LSTM state for the current state,
Adam) at the full capacity and at capacity 1. The memory read's share of the SR update is
1 - t(capacity 1) / t(capacity C): re-evaluating c, with its gradient, on the B x C stored representations.
Frames = agent steps x 4 action repeats.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools

import jax
import jax.numpy as jnp

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.networks.config import ConvNetworkConfig
from rlrepro.agents.impala.learner import Batch, make_learner as make_impala_learner
from rlrepro.agents.impala_sr.actor import init_actor, unroll
from rlrepro.agents.impala_sr.config import AdamConfig, ImpalaSRConfig, SRConfig, SRConvConfig
from rlrepro.agents.impala_sr.learner import SRBatch, make_learner
from rlrepro.agents.impala_sr.networks import make_sr_network
from rlrepro.bench.timing import Timing, compare_calls
from rlrepro.environments.jax_envs import Chain
from rlrepro.losses.synthetic_returns import EpisodicMemory
from rlrepro.plan_text import table, wrap

SIDE_BY_SIDE = "(timed side by side in interleaved rounds; the machine may be shared: read the ratios)"


def comparison(timings: dict[str, Timing], frames: int, reference: str, ms_per_update: bool = False) -> list[str]:
    """One row per update, its figures in aligned columns (80-column terminal): frames/s, the ratio to
    ``reference``'s frames/s, milliseconds per update if asked, the first (compiling) call's seconds."""
    base = frames / timings[reference].seconds_per_call
    ms = ["ms/update"] if ms_per_update else []
    header = ["update", "frames/s", f"ratio to {reference}", *ms, "first call (s)"]
    rows = [
        [name, f"{frames / t.seconds_per_call:,.0f}", f"{frames / t.seconds_per_call / base:.2f}",
         *([f"{1e3 * t.seconds_per_call:,.1f}"] if ms_per_update else []), f"{t.first_call_seconds:.1f}"]
        for name, t in timings.items()
    ]  # fmt: skip
    return table(header, rows, indent="  ")


def _configs(batch_size: int, unroll_length: int, capacity: int) -> dict[str, ImpalaSRConfig]:
    impala = ImpalaConfig(unroll_length=unroll_length, batch_size=batch_size, hidden_sizes=(128,), reward_clip=None,
                          max_grad_norm=40.0)
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


ATARI_SHAPE, ATARI_ACTIONS, ACTION_REPEAT = (4, 84, 84), 3, 4


def atari_batch(key: jax.Array, batch_size: int, unroll_length: int, capacity: int, dim: int, lstm: int) -> SRBatch:
    """An Atari-shaped SR batch: random frames, actions, Skiing-like rewards (-7 per step), a full memory."""
    keys = jax.random.split(key, 5)
    time, batch = unroll_length, batch_size
    zeros = jnp.zeros((batch, lstm), jnp.float32)
    return SRBatch(
        observations=jax.random.randint(keys[0], (time + 1, batch, *ATARI_SHAPE), 0, 256, jnp.int32).astype(jnp.uint8),
        actions=jax.random.randint(keys[1], (time, batch), 0, ATARI_ACTIONS, jnp.int32),
        rewards=jnp.full((time, batch), -7.0, jnp.float32),
        dones=jnp.zeros((time, batch), bool),
        env_discounts=jnp.ones((time, batch), jnp.float32),
        behaviour_logits=jax.random.normal(keys[2], (time, batch, ATARI_ACTIONS)),
        initial_core_state=(zeros, zeros),
        initial_memory=EpisodicMemory(
            jax.random.normal(keys[3], (batch, capacity, dim)), jnp.full((batch,), capacity, jnp.int32)
        ),
    )


def atari_case(batch_size: int, unroll_length: int, capacity: int, repeats: int, rounds: int) -> None:
    """Print the Atari-shaped comparison (see the module docstring)."""
    impala = ImpalaConfig(unroll_length=unroll_length, batch_size=batch_size, reward_clip=1.0, max_grad_norm=40.0)
    conv, lstm = SRConvConfig(), 256
    skiing = SRConfig(alpha=0.0112, beta=0.0, loss="two_stage", memory_capacity=capacity, current_repr="core")
    sr = ImpalaSRConfig(impala, skiing, lstm_size=lstm, conv=conv, adam=AdamConfig())
    configs = {
        "sr_baseline": ImpalaSRConfig(
            impala, SRConfig(enabled=False, alpha=0.0, memory_capacity=capacity), lstm_size=lstm, conv=conv, adam=AdamConfig()
        ),
        f"sr_memory{capacity}": sr,
        "sr_memory1": ImpalaSRConfig(impala, dataclasses.replace(skiing, memory_capacity=1), lstm_size=lstm, conv=conv,
                                     adam=AdamConfig()),
    }  # fmt: skip
    full = atari_batch(jax.random.key(0), batch_size, unroll_length, capacity, conv.fc_size, lstm)
    one = full._replace(initial_memory=EpisodicMemory(full.initial_memory.values[:, :1], jnp.ones((batch_size,), jnp.int32)))
    impala_conv = ImpalaConfig(
        unroll_length=unroll_length, batch_size=batch_size, reward_clip=1.0, max_grad_norm=40.0,
        conv_network=ConvNetworkConfig(kind="impala_shallow", shallow_torso="nature_3conv", lstm_size=lstm),
    )  # fmt: skip
    impala_batch = Batch(full.observations, full.actions, full.rewards, full.dones, full.behaviour_logits,
                         initial_core_state=full.initial_core_state)  # fmt: skip
    impala_learner = make_impala_learner(impala_conv, ATARI_SHAPE, ATARI_ACTIONS)
    steps = {"impala": (jax.jit(lambda s: impala_learner.update(s, impala_batch)[0]), impala_learner.init(jax.random.key(0)))}
    for name, config in configs.items():
        learner = make_learner(config, ATARI_SHAPE, ATARI_ACTIONS)
        data = one if name == "sr_memory1" else full
        steps[name] = (jax.jit(lambda s, learner=learner, data=data: learner.update(s, data)[0]),
                       learner.init(jax.random.key(0)))  # fmt: skip
    timings = compare_calls(steps, repeats=repeats, rounds=rounds)
    frames = unroll_length * batch_size * ACTION_REPEAT
    memory_mb = batch_size * capacity * conv.fc_size * 4 / 2**20
    setting = (f"Atari-shaped update, B={batch_size}, T={unroll_length}, frames {ATARI_SHAPE}, memory {capacity} x "
               f"{conv.fc_size} float32 per stream ({memory_mb:.0f} MiB per batch), devices {jax.local_devices()}")
    full_s, one_s = timings[f"sr_memory{capacity}"].seconds_per_call, timings["sr_memory1"].seconds_per_call
    share = (f"memory read share of the SR update (C={capacity}): {1 - one_s / full_s:.1%} "
             f"(1 - t(C=1) / t(C={capacity}))")
    print("\n".join(["", *wrap(setting), *wrap(SIDE_BY_SIDE),
                     *comparison(timings, frames, "sr_baseline", ms_per_update=True), *wrap(share, "  ")]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench impala-sr", description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--unroll", type=int, default=12)
    parser.add_argument("--big-capacity", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--atari-batch", type=int, default=8, help="Atari-shaped case's B (0: skip the case)")
    parser.add_argument("--atari-unroll", type=int, default=80, help="Atari-shaped case's T (Skiing: 80)")
    parser.add_argument("--atari-capacity", type=int, default=2000, help="memory slots per stream (Atari: 2,000)")
    parser.add_argument("--atari-repeats", type=int, default=2)
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
    setting = (f"IMPALA+SR learner update on the Chain, B={args.batch_size}, T={args.unroll}, "
               f"devices {jax.local_devices()}")
    print("\n".join([*wrap(setting), *wrap(SIDE_BY_SIDE), *comparison(timings, frames, "impala")]))
    if args.atari_batch > 0:
        atari_case(args.atari_batch, args.atari_unroll, args.atari_capacity, args.atari_repeats, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
