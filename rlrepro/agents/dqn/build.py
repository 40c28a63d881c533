"""``build_dqn``: a DQN spec and a gymnasium environment spec -> the runner's ``TrainerProgram``."""

from __future__ import annotations

from typing import Any

from rlrepro.agents.dqn.config import DQNConfig
from rlrepro.networks.config import ConvNetworkConfig
from rlrepro.agents.dqn.loop import DQNState, HostDQN, num_steps
from rlrepro.environments.errors import UnsupportedSetupError
from rlrepro.specs.agents.common import spec_values
from rlrepro.training.program import TrainerProgram, host_step_chunks, one_seed_program, seeds_of


def dqn_config(agent: Any, env_id: str | None = None, *, learning: bool = True) -> DQNConfig:
    """The learner config of a ``DQNAgentSpec`` on environment ``env_id`` (its epsilon decay may differ per id): every
    field at its place in the spec (``config.SPEC_PATHS``), the network and the per-environment decay derived here.
    ``learning`` false switches learning off whatever the spec says (a loss search's control arm: its inner DQNs)."""
    conv = None if agent.network.kind == "mlp" else ConvNetworkConfig.from_spec(agent.network)
    decay = agent.exploration.decay_steps if env_id is None else agent.exploration.decay_steps_for(env_id)
    return DQNConfig(
        **spec_values(DQNConfig, agent, omit=("epsilon_decay_steps", "learning")),
        learning=agent.learning and learning,
        epsilon_decay_steps=decay,
        hidden_sizes=tuple(agent.network.hidden_sizes) if conv is None else (),
        conv_network=conv,
    )


def resolve_dqn(agent: Any, env_spec: Any, *, frames: int, run: Any) -> DQNConfig:
    """The one place a DQN spec becomes its run's configuration on ``env_spec`` (used by ``build_dqn``)."""
    del frames, run  # DQN's schedules count environment steps, not the run's budget
    return dqn_config(agent, env_spec.id)


def build_dqn(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """DQN on a gymnasium environment (every seed of the job stepped in lockstep) or on Atari (one seed per job);
    chunk = ``run.updates_per_chunk`` environment steps."""
    from rlrepro.environments.availability import require_backend

    require_backend(env_spec)
    if env_spec.kind == "atari":
        return build_dqn_atari(agent, env_spec, frames=frames, run=run)
    if env_spec.kind != "gym":
        raise UnsupportedSetupError(f"DQN on '{env_spec.kind}' environments is not implemented (use kind: gym or atari)")
    if agent.network.kind != "mlp":
        raise UnsupportedSetupError(f"agent.network.kind '{agent.network.kind}': gymnasium vector observations need 'mlp'")
    config = resolve_dqn(agent, env_spec, frames=frames, run=run)
    dqn = HostDQN(config, env_spec)
    chunks = host_step_chunks(agent, env_spec, frames=frames, run=run)
    total = num_steps(frames, env_spec)

    def init_batch(keys: Any) -> DQNState:
        return dqn.init(seeds_of(keys), total)

    def run_chunk_batch(state: DQNState):
        return dqn.run(state, chunks.updates_per_chunk)

    return TrainerProgram(init_batch, run_chunk_batch, chunks.num_chunks, chunks.updates_per_chunk, chunks.frames_per_chunk)


def build_dqn_atari(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """DQN on one Atari game, one seed per job (``run.seeds_per_job: 1``)."""
    from rlrepro.agents.dqn.atari import AtariDQN

    if agent.network.kind == "mlp":
        raise UnsupportedSetupError("agent.network.kind 'mlp' cannot read Atari frames: use impala_shallow (the DQN net)")
    if agent.network.lstm_size is not None or agent.network.last_action_reward_inputs:
        raise UnsupportedSetupError(
            "DQN's Q-network is feed-forward on frames: set agent.network.lstm_size to null and last_action_reward_inputs to false"
        )
    if env_spec.num_envs != 1:
        raise UnsupportedSetupError(f"DQN on Atari plays one game per seed: set the environment's num_envs: 1, not {env_spec.num_envs}")
    chunks = host_step_chunks(agent, env_spec, frames=frames, run=run)
    config = resolve_dqn(agent, env_spec, frames=frames, run=run)
    dqn = AtariDQN(config, env_spec, total_steps=chunks.num_chunks * chunks.updates_per_chunk,
                   steps_per_chunk=chunks.updates_per_chunk)
    return one_seed_program(dqn, chunks)
