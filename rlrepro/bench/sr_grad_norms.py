"""The SR and RL terms' gradient norms on the shared layers (torso and LSTM) over a Skiing smoke run.

The SR loss (eq. 3 on Skiing) regresses the raw reward (about -7 per step, -6.5k..-9.5k at the last step: the
missed-gate penalties), while the RL losses see only alpha c(s_t) (beta 0). Both train the shared ConvNet and LSTM
(the SR loss through g(s_t) and b(s_t) on the LSTM state). This wraps the learner's update of the real Skiing
trainer (``HostImpalaSRTrainer`` with the spec's smoke settings, the episode cap lifted so games reach their
penalty) and, before each update, takes the gradients of the two terms apart on the update's own batch:

  RL term = pg + baseline + entropy losses;  SR term = loss_weight x the summed SR loss (total - RL term).

It prints, per update, the L2 norms of each term's gradient over the shared parameters, the batch's largest
|reward| and whether an episode ended in it, then the medians and maxima over batches with and without an
episode end. Usage: ``python -m rlrepro.bench sr-grad-norms --updates 40``.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from rlrepro.agents.impala_sr.learner import loss_fn
from rlrepro.agents.impala_sr.networks import make_sr_network

SHARED = ("torso", "core")  # the ConvNet and the LSTM: what both losses train


def term_gradient_norms(params: Any, batch: Any, config: Any, network: Any) -> tuple[jax.Array, jax.Array]:
    """L2 norms over the shared parameters of the RL terms' gradient and of the SR term's gradient."""

    def rl_and_sr(p: Any) -> tuple[jax.Array, jax.Array]:
        total, metrics = loss_fn(p, batch, config, network)
        sr = config.sr.loss_weight * metrics.sr_loss
        return total - sr, sr

    rl_grads = jax.grad(lambda p: rl_and_sr(p)[0])(params)["params"]
    sr_grads = jax.grad(lambda p: rl_and_sr(p)[1])(params)["params"]
    shared = lambda grads: {name: grads[name] for name in SHARED if name in grads}  # noqa: E731
    return optax.tree.norm(shared(rl_grads)), optax.tree.norm(shared(sr_grads))


def episode_end_batch(env_spec: Any, config: Any, network: Any, params: Any) -> Any:
    """One ``SRBatch`` whose B streams are the last T steps of a uniform-random Skiing game each (the last one pays
    the missed-gate penalty), with the memory holding the torso output of every earlier step of that game (counter
    = the steps before the window) and a zero LSTM state at the window's start; behaviour logits uniform."""
    from rlrepro.agents.impala_sr.learner import SRBatch  # noqa: PLC0415
    from rlrepro.agents.impala_sr.networks import SRActorCritic  # noqa: PLC0415
    from rlrepro.environments.atari import AtariEnv  # noqa: PLC0415
    from rlrepro.losses.synthetic_returns import EpisodicMemory  # noqa: PLC0415

    batch_size, unroll = config.impala.batch_size, config.impala.unroll_length
    env = AtariEnv(env_spec, num_envs=batch_size, seed=0, num_threads=1)
    frames, rewards, ends = [env.reset()], [], np.full(batch_size, -1)
    rng = np.random.default_rng(0)
    while np.any(ends < 0):
        step = env.step(rng.integers(0, env.num_actions, batch_size))
        frames.append(step.observation)
        rewards.append(step.reward)
        ends = np.where((ends < 0) & step.game_over, len(rewards) - 1, ends)
    env.close()
    frames, rewards = np.stack(frames), np.stack(rewards)  # [L + 1, B, ...], [L, B]
    capacity, embed = config.sr.memory_capacity, jax.jit(lambda x: network.apply(params, x, method=SRActorCritic.embed))
    observations, window_rewards, values, counters = [], [], [], []
    for i, end in enumerate(ends):
        start = end + 1 - unroll
        observations.append(frames[start:end + 2, i])
        window_rewards.append(rewards[start:end + 1, i])
        past = np.asarray(embed(jnp.asarray(frames[max(0, start - capacity):start, i])))
        values.append(np.pad(past, ((0, capacity - len(past)), (0, 0))))
        counters.append(start)
    actions = jnp.zeros((unroll, batch_size), jnp.int32)
    lstm = (jnp.zeros((batch_size, config.lstm_size)), jnp.zeros((batch_size, config.lstm_size)))
    return SRBatch(
        observations=jnp.asarray(np.stack(observations, axis=1)), actions=actions,
        rewards=jnp.asarray(np.stack(window_rewards, axis=1)), dones=jnp.zeros((unroll, batch_size), bool).at[-1].set(True),
        env_discounts=jnp.ones((unroll, batch_size)), behaviour_logits=jnp.zeros((unroll, batch_size, env.num_actions)),
        initial_core_state=lstm,
        initial_memory=EpisodicMemory(jnp.asarray(np.stack(values)), jnp.asarray(counters, jnp.int32)),
    )


def _summary(rows: list[dict], ended: bool) -> list[str]:
    """Medians and maxima of both norms and of their ratio over the batches with (or without) an episode end."""
    picked = [r for r in rows if r["episode_end"] == ended]
    head = f"batches {'with' if ended else 'without'} an episode end: {len(picked)}"
    if not picked:
        return [head]
    rl, sr = [r["rl"] for r in picked], [r["sr"] for r in picked]
    ratio = [r["sr"] / max(r["rl"], 1e-12) for r in picked]
    return [head] + [
        f"  {name:<6} median {statistics.median(values):>10.4g}  max {max(values):>10.4g}"
        for name, values in (("RL", rl), ("SR", sr), ("SR/RL", ratio))
    ]


def main(argv: list[str] | None = None) -> int:
    from rlrepro.agents.impala_sr.host_trainer import HostImpalaSRTrainer  # noqa: PLC0415 (needs ale-py)
    from rlrepro.agents.registry import resolve_config  # noqa: PLC0415
    from rlrepro.specs import load_spec  # noqa: PLC0415
    from rlrepro.specs.loading import resolve_agent, resolve_env  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench sr-grad-norms", description=__doc__)
    parser.add_argument("--spec", default="specs/synthetic_returns/skiing.yaml")
    parser.add_argument("--updates", type=int, default=40, help="learner updates (each on one batch)")
    parser.add_argument("--scale", default="smoke")
    parser.add_argument("--episode-end", action="store_true",
                        help="also one batch of the last T steps of random games (the gate penalty) at the initial parameters")
    args = parser.parse_args(argv)

    spec = load_spec(args.spec)
    variant = next(v for v in spec.variant_list() if v.name == "sr")
    env_spec = resolve_env(spec, spec.environments[0].id, args.scale)
    env_spec = env_spec.model_copy(update={"max_episode_frames": 108_000})  # whole games: the penalty is at the end
    run = spec.run.model_copy(update={"updates_per_chunk": args.updates})
    config = resolve_config(resolve_agent(spec, variant, args.scale), env_spec, frames=10**9, run=run).config
    trainer = HostImpalaSRTrainer(config, env_spec, resolve_agent(spec, variant, args.scale).actor, updates_per_chunk=args.updates)
    network = make_sr_network(config, trainer.num_actions)
    norms = jax.jit(lambda params, batch: term_gradient_norms(params, batch, config, network))
    rows: list[dict] = []
    real_update = trainer.update

    def measured_update(learner: Any, batch: Any) -> Any:
        rl, sr = norms(learner.params, batch)
        row = {"rl": float(rl), "sr": float(sr), "max_abs_reward": float(jnp.max(jnp.abs(batch.rewards))),
               "episode_end": bool(np.any(np.asarray(batch.dones)))}
        rows.append(row)
        print(f"update {len(rows):3d}: RL {row['rl']:10.4g}  SR {row['sr']:10.4g}  max|r| {row['max_abs_reward']:8.5g}"
              f"  end {'yes' if row['episode_end'] else 'no'}", flush=True)
        return real_update(learner, batch)

    trainer.update = measured_update
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    if args.episode_end:
        batch = episode_end_batch(env_spec, config, network, state.learner.params)
        rl, sr = norms(state.learner.params, batch)
        print(f"games' last {config.impala.unroll_length} steps, initial params: RL {float(rl):.4g}  "
              f"SR {float(sr):.4g}  max|r| {float(jnp.max(jnp.abs(batch.rewards))):.5g}", flush=True)
    try:
        trainer.run_chunk(state)
    finally:
        trainer.stop()
    print(f"gradient L2 norms on the shared layers ({', '.join(SHARED)}); {args.scale} scale, episode cap")
    print(f"lifted, T {config.impala.unroll_length}, B {config.impala.batch_size}, SR loss weight {config.sr.loss_weight}, "
          f"{config.sr.loss}")
    print("\n".join(_summary(rows, True) + _summary(rows, False)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
