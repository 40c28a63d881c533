"""The memory's D_KL(mu || pi) and far fraction of DDPG, trained and frozen, at the spec's cpu sizes: the figures
behind the stored behaviour mu = pi at the acting parameters (``refer_host.TransitionHost._explore``).

    python scripts/ddpg_behaviour_kl.py --variant er --steps 7000 --seeds 2
    python scripts/ddpg_behaviour_kl.py --variant er --steps 7000 --seeds 2 --frozen

``--frozen``: both learning rates 1e-30 (Adam's steps of size ~1e-30: the networks never move), the control a
metric must not pass by itself. Prints, every ``--chunk`` steps after N_start, each seed's far fraction n_far / N,
the memory's average D_KL with the current policy, and the largest per-step D_KL against the paper's bound
2 d_A / sigma^2.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from rlrepro.agents.ddpg.build import resolve_ddpg
from rlrepro.agents.ddpg.loop import HostDDPG
from rlrepro.specs.loading import load_spec, resolve_agent, resolve_env
from rlrepro.training.refer_host import standardise_seeds


def largest_kl(host: HostDDPG, state) -> np.ndarray:
    """Per seed, the largest D_KL(mu_k || pi_w(.|s_k)) over the committed steps (the memory KL's terms)."""
    bank, n = state.host.bank, len(state.host.envs)
    obs = standardise_seeds(bank.obs.reshape(n, bank.size, -1), state.host.obs_mean, state.host.obs_inv_std)
    mean = np.asarray(host._mean(host._acting_params(state.learner), obs))
    kl = np.sum((mean - bank.mu_mean.reshape(n, bank.size, -1)) ** 2, axis=-1) / (2.0 * host.config.sigma**2)
    return np.array([kl[i, r.stored()].max() for i, r in enumerate(state.host.replays)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="specs/refer/mujoco_ddpg.yaml")
    parser.add_argument("--variant", default="er")
    parser.add_argument("--env", default="half_cheetah")
    parser.add_argument("--steps", type=int, default=7000)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--frozen", action="store_true")
    args = parser.parse_args()
    spec = load_spec(args.spec)
    variant = next(v for v in spec.variant_list() if v.name == args.variant)
    env = resolve_env(spec, args.env, "cpu")
    config = resolve_ddpg(resolve_agent(spec, variant, "cpu"), env, frames=args.steps * env.frames_per_step, run=spec.run)
    if args.frozen:
        config = dataclasses.replace(config, policy_learning_rate=1e-30, critic_learning_rate=1e-30)
    host = HostDDPG(config, env)
    state = host.init(list(range(args.seeds)))
    state, _ = host.run(state, config.n_start)
    bound = 2 * host.action_dim / config.sigma**2
    print(f"{args.variant}{' frozen' if args.frozen else ''} on {args.env}: exploration {config.exploration}, "
          f"N_start {config.n_start}, bound 2 d_A / sigma^2 = {bound:g}")
    for done in range(config.n_start, args.steps, args.chunk):
        steps = min(args.chunk, args.steps - done)
        state, m = host.run(state, steps)
        print(f"step {done + steps:>6}: far fraction {np.round(m.far_fraction, 3)}, memory D_KL "
              f"{np.round(m.memory_kl, 3)}, largest step D_KL {np.round(largest_kl(host, state), 2)}")


if __name__ == "__main__":
    main()
