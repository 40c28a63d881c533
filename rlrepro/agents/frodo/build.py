"""``build_frodo``: a FRODO spec and an environment spec -> the runner's ``TrainerProgram`` (the jitted loop on
pure-JAX environments, ``loop.py``; on Atari the host actor-learner, ``host_trainer.py``), and ``resolve_frodo``,
the one place the spec becomes the run's configuration."""

from __future__ import annotations

from typing import Any, NamedTuple

from rlrepro.agents.frodo.config import FrodoConfig, OptimizerConfig, frodo_chunks, monte_carlo_episode_length
from rlrepro.agents.frodo.loop import make_frodo_trainer
from rlrepro.specs.agents.common import spec_values
from rlrepro.training.program import TrainerProgram, one_seed_program


def frodo_config(
    agent: Any, total_updates: int, meta_unroll: int | None = None, *, episode_length: int | None = None
) -> FrodoConfig:
    """The learner config of a ``FrodoAgentSpec``: every field at its place in the spec (``config.SPEC_PATHS``), the
    network, the optimisers (``total_updates`` meta-iterations set their lr schedules) and the outer unroll derived
    here.

    ``meta_unroll`` only trades compile time for run time (see ``FrodoConfig``). ``episode_length``: the
    validation length of a Monte Carlo outer loss (``monte_carlo_episode_length``), required for it.
    """
    if agent.outer.kind == "monte_carlo" and episode_length is None:
        raise ValueError("a Monte Carlo outer loss needs the environment's episode length (monte_carlo_episode_length)")
    if not agent.optimizer.eps_in_sqrt or not agent.meta_optimizer.eps_in_sqrt:
        raise ValueError("FRODO differentiates through RMSProp: eps_in_sqrt must be true (NaN otherwise)")
    net = agent.network
    agent_steps = agent.inner_steps + (1 if agent.target == "vtrace" else 0)  # the baseline also learns from batch M + 1
    conv = dict(
        conv_channels=tuple(net.channels), conv_kernels=tuple(net.kernel_sizes), conv_strides=tuple(net.strides),
        conv_fc_size=net.fc_size,
    ) if net.kind == "frodo_conv" else {}
    return FrodoConfig(
        **spec_values(FrodoConfig, agent),
        network=net.kind,
        hidden_sizes=tuple(net.hidden_sizes) if net.kind == "mlp" else (),
        **conv,
        optimizer=OptimizerConfig.from_spec(agent.optimizer, total_updates * agent_steps, learning=agent.learning),
        meta_optimizer=OptimizerConfig.from_spec(agent.meta_optimizer, total_updates, learning=agent.learning),
        outer_unroll_length=episode_length if agent.outer.kind == "monte_carlo" else agent.outer.unroll_length,
        meta_unroll=meta_unroll,
    )



class FrodoSetup(NamedTuple):
    """Everything a FRODO run takes from its agent spec: the learner config, the number of meta-updates (they
    set the learning-rate schedules) and the actors' organisation (``actor``: Atari only)."""

    config: FrodoConfig
    total_updates: int
    actor: Any


def resolve_frodo(agent: Any, env_spec: Any, *, frames: int, run: Any) -> FrodoSetup:
    """The one place a FRODO spec becomes its run's configuration (used by ``build_frodo``)."""
    from rlrepro.environments.jax_envs import make_jax_env
    from rlrepro.specs.environments import JaxEnvSpec

    episode_length = None
    if agent.outer.kind == "monte_carlo" and isinstance(env_spec, JaxEnvSpec):
        episode_length = monte_carlo_episode_length(agent, make_jax_env(env_spec.name, **env_spec.kwargs), env_spec.id)
    chunks = frodo_chunks(agent, env_spec, frames=frames, run=run)
    total_updates = chunks.num_chunks * chunks.updates_per_chunk
    meta_unroll = None if isinstance(env_spec, JaxEnvSpec) else 1  # g_eta's LSTM as a scan on Atari
    config = frodo_config(agent, total_updates=total_updates, meta_unroll=meta_unroll, episode_length=episode_length)
    if config.frames_per_meta_update * env_spec.frames_per_step * chunks.updates_per_chunk != chunks.frames_per_chunk:
        # The planned frames (frodo_chunks, JAX-free) and what a meta-update consumes must never drift apart.
        raise AssertionError(f"frodo_chunks plans {chunks.frames_per_chunk} frames per chunk; the config consumes "
                             f"{config.frames_per_meta_update * env_spec.frames_per_step * chunks.updates_per_chunk}")
    return FrodoSetup(config, total_updates, agent.actor)


def build_frodo(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """FRODO on a pure-JAX environment (each chunk of meta-iterations one jitted, vmapped call) or on Atari."""
    from rlrepro.environments.availability import require_backend
    from rlrepro.environments.errors import UnsupportedSetupError
    from rlrepro.environments.jax_envs import make_jax_env
    from rlrepro.specs.environments import AtariEnvSpec, JaxEnvSpec

    require_backend(env_spec)
    if isinstance(env_spec, AtariEnvSpec):
        return build_frodo_atari(agent, env_spec, frames=frames, run=run)
    if not isinstance(env_spec, JaxEnvSpec):
        raise UnsupportedSetupError(f"FRODO on '{env_spec.kind}' environments is not implemented")
    env = make_jax_env(env_spec.name, **env_spec.kwargs)
    config, total_updates, _ = resolve_frodo(agent, env_spec, frames=frames, run=run)
    if config.network == "frodo_conv":
        raise UnsupportedSetupError("the frodo_conv torso needs image observations (Atari); use mlp or tabular here")
    trainer = make_frodo_trainer(env, config, updates_per_chunk=run.updates_per_chunk)
    chunks = frodo_chunks(agent, env_spec, frames=frames, run=run)  # what resolve_frodo set the schedules for
    return TrainerProgram(trainer.init_batch, trainer.run_chunk_batch, chunks.num_chunks, chunks.updates_per_chunk,
                          chunks.frames_per_chunk)


def build_frodo_atari(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """FRODO on Atari: one seed per job; IMPALA's actor threads (or synchronous actor) and the meta-update."""
    from rlrepro.agents.frodo.host_trainer import HostFrodoTrainer
    from rlrepro.environments.errors import UnsupportedSetupError

    if agent.network.kind != "frodo_conv":
        raise UnsupportedSetupError(f"agent.network.kind '{agent.network.kind}' cannot read Atari frames: use frodo_conv")
    config, total_updates, actor = resolve_frodo(agent, env_spec, frames=frames, run=run)
    trainer = HostFrodoTrainer(config, env_spec, actor, updates_per_chunk=run.updates_per_chunk, total_updates=total_updates)
    return one_seed_program(trainer, frodo_chunks(agent, env_spec, frames=frames, run=run))
