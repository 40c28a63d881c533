"""``build_dqn``: a DQN spec and a gymnasium environment spec -> the runner's ``TrainerProgram``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rlrepro.agents.dqn.config import DQNConfig
from rlrepro.agents.dqn.trainer import DQNState, HostDQN, num_steps
from rlrepro.environments.errors import UnsupportedSetupError


def dqn_config(agent: Any) -> DQNConfig:
    """The learner config of a ``DQNAgentSpec``."""
    return DQNConfig(
        loss=agent.loss.name,
        td_scale=agent.loss.td_scale,
        k=agent.loss.k,
        clip_gamma=agent.loss.clip_gamma,
        discount=agent.discount,
        learning_rate=agent.optimizer.learning_rate,
        adam_eps=agent.optimizer.eps,
        hidden_sizes=tuple(agent.network.hidden_sizes),
        batch_size=agent.batch_size,
        replay_capacity=agent.replay_capacity,
        min_replay=agent.min_replay,
        update_period=agent.update_period,
        target_period=agent.target_period,
        epsilon_start=agent.exploration.start,
        epsilon_end=agent.exploration.end,
        epsilon_decay_steps=agent.exploration.decay_steps,
    )


def seeds_of(keys: Any) -> list[int]:
    """The run seeds back from the runner's seed keys (raw data of ``jax.random.key(seed)``: [0, seed])."""
    return [int(np.asarray(k).ravel()[-1]) for k in np.asarray(keys)]


def build_dqn(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """DQN on a gymnasium environment, every seed of the job stepped in lockstep; chunk = ``run.updates_per_chunk`` steps."""
    from rlrepro.agents.registry import TrainerProgram
    from rlrepro.environments.availability import require_backend

    require_backend(env_spec)
    if env_spec.kind == "atari":
        raise UnsupportedSetupError(
            "DQN on Atari needs rlrepro.environments.atari (the shared Atari module, in progress); "
            "the spec validates and plans, but cannot train yet"
        )
    if env_spec.kind != "gym":
        raise UnsupportedSetupError(f"DQN on '{env_spec.kind}' environments is not implemented (use kind: gym)")
    if agent.network.kind != "mlp":
        raise UnsupportedSetupError(f"agent.network.kind '{agent.network.kind}': gymnasium vector observations need 'mlp'")
    config = dqn_config(agent)
    dqn = HostDQN(config, env_spec)
    total = num_steps(frames, env_spec)
    steps = min(run.updates_per_chunk, total)
    num_chunks = math.ceil(total / steps)

    def init_batch(keys: Any) -> DQNState:
        return dqn.init(seeds_of(keys), total)

    def run_chunk_batch(state: DQNState):
        return dqn.run(state, steps)

    return TrainerProgram(init_batch, run_chunk_batch, num_chunks, steps, steps * env_spec.frames_per_step)
