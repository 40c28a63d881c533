"""IMPALA trainers: the jitted act-then-update loop on pure-JAX environments, the actor-learner on Atari."""

from __future__ import annotations

from typing import Any, NamedTuple

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.networks.config import ConvNetworkConfig
from rlrepro.environments.availability import require_backend
from rlrepro.environments.errors import UnsupportedSetupError
from rlrepro.specs import ImpalaAgentSpec
from rlrepro.specs.agents.common import spec_values
from rlrepro.specs.agents.impala import ActorSpec
from rlrepro.specs.environments import AtariEnvSpec, JaxEnvSpec
from rlrepro.specs.experiment import RunSpec
from rlrepro.agents.impala.config import impala_chunks
from rlrepro.training.actor_learner import check_one_env_per_actor
from rlrepro.training.program import TrainerProgram, one_seed_program
from rlrepro.agents.impala.pbt import PBTConfig


class ImpalaSetup(NamedTuple):
    """Everything an IMPALA run takes from its agent spec: the learner config and the actors' organisation
    (``actor`` acts on host environments only; pure-JAX tasks act synchronously inside the jitted loop), and
    in multi-task mode (§5.3.2) the population's PBT rule (``multitask``; None: one agent per environment)."""

    config: ImpalaConfig
    actor: ActorSpec
    multitask: MultiTaskConfig | None = None


class MultiTaskConfig(NamedTuple):
    """The multi-task mode: PBT's rule (App. F) or None (a population of one with the spec's values)."""

    pbt: PBTConfig | None


def resolve_impala(agent: ImpalaAgentSpec, env_spec: Any, *, frames: int, run: RunSpec) -> ImpalaSetup:
    """The one place an IMPALA spec becomes its run's configuration (used by ``build_impala`` and
    ``build_impala_multitask``; in multi-task mode ``env_spec`` is any one of the games, ``frames`` per member)."""
    chunks = impala_chunks(agent, env_spec, frames=frames, run=run)
    total_updates = chunks.num_chunks * chunks.updates_per_chunk
    if agent.actor.mode in ("a2c_sync_traj", "a3c"):
        num_envs = getattr(env_spec, "num_envs", None)
        if agent.batch_size != num_envs:
            raise UnsupportedSetupError(
                f"agent.actor.mode {agent.actor.mode}: agent.batch_size ({agent.batch_size}) must equal the "
                f"environment's num_envs ({num_envs}): one round of every actor's unroll is one update's batch"
            )
        try:
            check_one_env_per_actor(agent.actor.mode, num_envs, agent.actor.num_actors)
        except ValueError as error:
            raise UnsupportedSetupError(f"agent.{error}") from None
    if agent.actor.mode == "a3c":
        # Each worker applies its own gradient: one update's frames are num_actors gradients (lr schedule length).
        total_updates *= agent.actor.num_actors
    config = impala_config(agent, total_updates=total_updates)
    if agent.multitask is None:
        return ImpalaSetup(config, agent.actor)
    if not isinstance(env_spec, AtariEnvSpec) or env_spec.action_set != "full":
        raise UnsupportedSetupError(
            "agent.multitask: the multi-task agent plays Atari with the full 18-action set (App. G); "
            f"got a '{env_spec.kind}' environment" + (f" with action_set '{env_spec.action_set}'" if isinstance(env_spec, AtariEnvSpec) else "")
        )
    pbt = agent.multitask.pbt
    pbt_config = None if not pbt.enabled else PBTConfig(
        population_size=pbt.population_size, burn_in_frames=pbt.burn_in_frames, ready_episodes=pbt.ready_episodes,
        copy_threshold=pbt.copy_threshold, perturb_probability=pbt.perturb_probability,
        perturb_factor=pbt.perturb_factor, adapted=tuple(pbt.adapted), seed=pbt.seed,
        initial_learning_rate=tuple(pbt.initial_learning_rate), initial_entropy_cost=tuple(pbt.initial_entropy_cost),
        initial_rmsprop_epsilon=tuple(pbt.initial_rmsprop_epsilon),
    )  # fmt: skip
    return ImpalaSetup(config, agent.actor, MultiTaskConfig(pbt_config))


def impala_config(agent: ImpalaAgentSpec, total_updates: int) -> ImpalaConfig:
    """The IMPALA learner config from its spec: every field at its place in the spec (``config.SPEC_PATHS``; an
    IMPALA+SR spec has no ``replay``, so its config keeps the spec model's none), the network's and the schedule's
    length derived here."""
    mlp = agent.network.kind == "mlp"
    no_replay = () if isinstance(agent, ImpalaAgentSpec) else ("replay_fraction", "replay_capacity")
    return ImpalaConfig(
        **spec_values(ImpalaConfig, agent, omit=no_replay),
        total_updates=total_updates,
        hidden_sizes=tuple(agent.network.hidden_sizes) if mlp else (64, 64),
        conv_network=None if mlp else ConvNetworkConfig.from_spec(agent.network),
    )


def build_impala(agent: ImpalaAgentSpec, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """IMPALA on a pure-JAX environment (one jitted call per chunk) or on Atari (actor threads + learner)."""
    require_backend(env_spec)
    if agent.multitask is not None:
        return build_impala_multitask(agent, [env_spec], frames=frames, run=run)
    if isinstance(env_spec, AtariEnvSpec):
        return build_impala_atari(agent, env_spec, frames=frames, run=run)
    if not isinstance(env_spec, JaxEnvSpec):
        raise UnsupportedSetupError(f"IMPALA on '{env_spec.kind}' environments is not implemented")
    if agent.network.kind != "mlp":
        raise UnsupportedSetupError(
            f"agent.network.kind '{agent.network.kind}' is for image observations; use 'mlp' on pure-JAX tasks"
        )
    from rlrepro.environments.jax_envs import make_jax_env
    from rlrepro.agents.impala.loop import make_jax_trainer

    chunks = impala_chunks(agent, env_spec, frames=frames, run=run)
    config = resolve_impala(agent, env_spec, frames=frames, run=run).config
    env = make_jax_env(env_spec.name, **env_spec.kwargs)
    trainer = make_jax_trainer(env, config, updates_per_chunk=run.updates_per_chunk)
    return TrainerProgram(
        init_batch=trainer.init_batch,
        run_chunk_batch=trainer.run_chunk_batch,
        num_chunks=chunks.num_chunks,
        updates_per_chunk=chunks.updates_per_chunk,
        frames_per_chunk=chunks.frames_per_chunk,
    )


def build_impala_atari(agent: ImpalaAgentSpec, env_spec: AtariEnvSpec, *, frames: int, run: RunSpec) -> TrainerProgram:
    """IMPALA on Atari: one seed per job; actor threads (or the lagged synchronous actor) and the learner."""
    if agent.network.kind == "mlp":
        raise UnsupportedSetupError("agent.network.kind 'mlp' cannot read Atari frames: use impala_shallow or impala_deep")
    from rlrepro.agents.impala.host_trainer import HostImpalaTrainer

    if agent.replay.fraction > 0:
        raise UnsupportedSetupError(
            "agent.replay.fraction > 0: the learner's replay buffer runs in the jitted loop of pure-JAX tasks only, "
            "not with Atari's actor threads"
        )

    chunks = impala_chunks(agent, env_spec, frames=frames, run=run)
    setup = resolve_impala(agent, env_spec, frames=frames, run=run)
    trainer = HostImpalaTrainer(setup.config, env_spec, setup.actor, updates_per_chunk=run.updates_per_chunk)

    return one_seed_program(trainer, chunks)


def build_impala_multitask(agent: ImpalaAgentSpec, env_specs: list[Any], *, frames: int, run: RunSpec) -> TrainerProgram:
    """IMPALA's multi-task agent (§5.3.2): a population (PBT, or one member) of learners vmapped in one job,
    each with actors on every game; ``frames`` per member. Metrics have one row per game."""
    if agent.network.kind == "mlp":
        raise UnsupportedSetupError("agent.network.kind 'mlp' cannot read Atari frames: use impala_shallow or impala_deep")
    for env_spec in env_specs:
        require_backend(env_spec)
    setups = [resolve_impala(agent, env_spec, frames=frames, run=run) for env_spec in env_specs]
    if any(other != setups[0] for other in setups[1:]):
        raise UnsupportedSetupError("multi-task games must share the action repeat (one frame count per update)")
    setup = setups[0]
    from rlrepro.agents.impala.multitask import MultiTaskTrainer

    chunks = impala_chunks(agent, env_specs[0], frames=frames, run=run)
    trainer = MultiTaskTrainer(
        setup.config, env_specs, setup.actor, updates_per_chunk=run.updates_per_chunk, pbt=setup.multitask.pbt
    )

    return one_seed_program(
        trainer, chunks, "a multi-task job trains one seed (one population): set run.seeds_per_job: 1"
    )
