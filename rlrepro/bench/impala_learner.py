"""IMPALA learner-only throughput on Atari-shaped batches: frames/s of the sharded update, compile excluded.

Random uint8 observations ``[T + 1, B, 4, 84, 84]``, random actions/rewards/behaviour logits, one fixed
batch; the update is the same ``make_sharded_update`` the actor-learner uses, over all local devices
(one CPU, or every GPU). Updates are called one by one from Python (never inside ``lax.scan``: conv
gradients in scan are ~15x slower on XLA:CPU, STACK.md trap 12). Frames = agent steps x action repeat.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.networks.config import ConvNetworkConfig
from rlrepro.agents.impala.learner import Batch, make_learner
from rlrepro.agents.impala.networks import initial_core_state, make_network
from rlrepro.agents.impala.sharding import make_sharded_update
from rlrepro.bench.timing import time_calls

ATARI_OBSERVATION_SHAPE = (4, 84, 84)


def random_batch(
    network_config: ConvNetworkConfig, *, batch_size: int, unroll: int, num_actions: int, seed: int = 0
) -> Batch:
    """A host (numpy) batch with the Atari layout and random contents."""
    rng = np.random.default_rng(seed)
    config = ImpalaConfig(unroll_length=unroll, batch_size=batch_size, max_grad_norm=40.0, conv_network=network_config)
    core_state = initial_core_state(make_network(config, num_actions), batch_size)
    return Batch(
        observations=rng.integers(0, 256, (unroll + 1, batch_size, *ATARI_OBSERVATION_SHAPE), dtype=np.uint8),
        actions=rng.integers(0, num_actions, (unroll, batch_size), dtype=np.int32),
        rewards=rng.choice(np.array([-1.0, 0.0, 0.0, 1.0], np.float32), (unroll, batch_size)),
        dones=rng.random((unroll, batch_size)) < 0.01,
        behaviour_logits=rng.normal(size=(unroll, batch_size, num_actions)).astype(np.float32),
        initial_core_state=jax.tree.map(np.asarray, core_state),
        prev_action=np.zeros((batch_size,), np.int32),
        prev_reward=np.zeros((batch_size,), np.float32),
    )


def learner_frames_per_second(
    network_spec_kind: str,
    batch_size: int = 32,
    unroll: int = 20,
    repeats: int = 5,
    *,
    shallow_torso: str = "a3c_2conv",
    lstm_size: int | None = None,
    last_action_reward_inputs: bool = False,
    num_actions: int = 6,
    action_repeat: int = 4,
    devices: list[jax.Device] | None = None,
) -> float:
    """Learner frames/s (``unroll * batch_size * action_repeat`` per update) over ``repeats`` timed updates.

    Args:
      network_spec_kind: ``ConvNetworkSpec.kind``, "impala_shallow" or "impala_deep".
      batch_size, unroll: B and T (Table G.1: 32 and 20).
      repeats: timed updates after one warm-up (compile) update; 2-3 suffice for the deep net on CPU.
      shallow_torso, lstm_size, last_action_reward_inputs: the other ``ConvNetworkSpec`` fields.
      num_actions: policy width (Pong's minimal set has 6).
      action_repeat: frames per agent step (4 on Atari).
      devices: devices to shard the batch over; default all local devices.
    """
    network = ConvNetworkConfig(
        kind=network_spec_kind,
        shallow_torso=shallow_torso,
        lstm_size=lstm_size,
        last_action_reward_inputs=last_action_reward_inputs,
    )
    config = ImpalaConfig(unroll_length=unroll, batch_size=batch_size, max_grad_norm=40.0, conv_network=network)
    learner = make_sharded_update(make_learner(config, ATARI_OBSERVATION_SHAPE, num_actions), devices)
    state = learner.init(jax.random.key(0))
    batch = learner.shard_batch(
        random_batch(network, batch_size=batch_size, unroll=unroll, num_actions=num_actions)
    )
    seconds = time_calls(lambda s: learner.update(s, batch)[0], state, repeats=repeats).seconds_per_call
    return unroll * batch_size * action_repeat / seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench.impala_learner", description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", default=["impala_shallow", "impala_deep"])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--unroll", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--deep-repeats", type=int, default=2)
    parser.add_argument("--lstm-size", type=int, default=None)
    args = parser.parse_args(argv)
    print(f"IMPALA learner only, B={args.batch_size}, T={args.unroll}, devices {jax.local_devices()}")
    for kind in args.kinds:
        repeats = args.deep_repeats if kind == "impala_deep" else args.repeats
        fps = learner_frames_per_second(
            kind, args.batch_size, args.unroll, repeats, lstm_size=args.lstm_size
        )
        print(f"  {kind:16s} lstm={args.lstm_size}  {fps:10,.0f} frames/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
