"""IMPALA+SR trainer: the spec -> config mapping (the one place) and the registry builders (pure-JAX tasks, Atari)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from rlrepro.agents.impala.build import impala_config
from rlrepro.agents.impala_sr.config import AdamConfig, ImpalaSRConfig, SRConfig, SRConvConfig
from rlrepro.environments.availability import require_backend
from rlrepro.environments.errors import UnsupportedSetupError
from rlrepro.specs.agents.common import RMSPropSpec, spec_values
from rlrepro.specs.agents.impala import ActorSpec
from rlrepro.specs.agents.impala_sr import ImpalaSRAgentSpec, SRAdamSpec, SRConvNetworkSpec, SRNetworkSpec
from rlrepro.specs.environments import AtariEnvSpec, JaxEnvSpec
from rlrepro.agents.impala.config import impala_chunks
from rlrepro.specs.experiment import RunSpec
from rlrepro.training.program import TrainerProgram, one_seed_program


class ImpalaSRSetup(NamedTuple):
    """Everything an IMPALA+SR run takes from its agent spec: the learner/actor config and, on Atari, how the host
    actors are organised (None on pure-JAX tasks, which act inside the jitted loop)."""

    config: ImpalaSRConfig
    actor: ActorSpec | None


def impala_sr_config(agent: ImpalaSRAgentSpec, total_updates: int) -> ImpalaSRConfig:
    """The IMPALA+SR config from its spec: every field of ``ImpalaSRAgentSpec`` but ``actor`` is read here."""
    opt, loss, sr, net = agent.optimizer, agent.loss, agent.sr, agent.network
    if loss.reward_transform != "clip":
        raise UnsupportedSetupError(f"agent.loss.reward_transform '{loss.reward_transform}': impala_sr supports 'clip'")
    # IMPALA's own derivation reads the fields the agents share (loss, unroll, batch, lag, learning rate and its
    # schedule, gradient clipping). It knows RMSProp and the MLP torso only, so Adam and the ConvNet are shown to it
    # as their shared parts; their own constants go to ``adam`` and ``conv`` below.
    shared: dict[str, Any] = {}
    if isinstance(opt, SRAdamSpec):
        shared["optimizer"] = RMSPropSpec(
            learning_rate=opt.learning_rate, epsilon=opt.eps, max_grad_norm=opt.max_grad_norm, lr_schedule=opt.lr_schedule
        )
    if isinstance(net, SRConvNetworkSpec):
        shared["network"] = SRNetworkSpec(kind="mlp", hidden_sizes=[net.fc_size], lstm_size=net.lstm_size)
    impala = impala_config(agent.model_copy(update=shared) if shared else agent, total_updates)
    sr_config = SRConfig(**spec_values(SRConfig, sr))
    if sr.current_repr == "core" and net.lstm_size is None:
        raise UnsupportedSetupError("agent.sr.current_repr 'core' needs an LSTM: set agent.network.lstm_size")
    rmsprop = opt if isinstance(opt, RMSPropSpec) else None
    return ImpalaSRConfig(
        impala=impala,
        sr=sr_config,
        lstm_size=net.lstm_size,
        head_hidden=tuple(net.head_hidden_sizes),
        rmsprop_eps_in_sqrt=rmsprop.eps_in_sqrt if rmsprop else True,
        rmsprop_initial_scale=rmsprop.initial_scale if rmsprop else 1.0,
        conv=None if not isinstance(net, SRConvNetworkSpec) else SRConvConfig(
            channels=tuple(net.channels), kernel_size=net.kernel_size, stride=net.stride, fc_size=net.fc_size
        ),
        adam=AdamConfig(b1=opt.b1, b2=opt.b2, eps=opt.eps) if isinstance(opt, SRAdamSpec) else None,
    )


def resolve_impala_sr(agent: ImpalaSRAgentSpec, env_spec: Any, *, frames: int, run: RunSpec) -> ImpalaSRSetup:
    """The one place an IMPALA+SR spec becomes its run's configuration (used by ``build_impala_sr``)."""
    atari = isinstance(env_spec, AtariEnvSpec)
    if atari and agent.network.kind != "sr_conv":
        raise UnsupportedSetupError(f"agent.network.kind '{agent.network.kind}' cannot read Atari frames: use sr_conv")
    if not atari and agent.network.kind == "sr_conv":
        raise UnsupportedSetupError("agent.network.kind 'sr_conv' is the Atari ConvNet: use mlp on pure-JAX tasks")
    if atari and agent.actor is None:
        raise UnsupportedSetupError("agent.actor: impala_sr on Atari needs the host actors' organisation (e.g. {mode: threaded})")
    if not atari and agent.actor is not None:
        raise UnsupportedSetupError("agent.actor: pure-JAX tasks act inside the jitted loop; remove agent.actor")
    if atari and agent.actor.mode == "a3c":
        raise UnsupportedSetupError("agent.actor.mode a3c is not wired for impala_sr: use threaded, sync or a2c_sync_traj")
    chunks = impala_chunks(agent, env_spec, frames=frames, run=run)
    config = impala_sr_config(agent, total_updates=chunks.num_chunks * chunks.updates_per_chunk)
    return ImpalaSRSetup(config, agent.actor)


def build_impala_sr(agent: ImpalaSRAgentSpec, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """IMPALA+SR on a pure-JAX environment (one jitted, seed-vmapped call per chunk) or on Atari (the host
    actor-learner, one seed per job)."""
    require_backend(env_spec)
    if isinstance(env_spec, AtariEnvSpec):
        return build_impala_sr_atari(agent, env_spec, frames=frames, run=run)
    if not isinstance(env_spec, JaxEnvSpec):
        raise UnsupportedSetupError(f"impala_sr on '{env_spec.kind}' environments is not implemented")
    from rlrepro.agents.impala_sr.loop import has_chain_probe, make_sr_trainer
    from rlrepro.environments.jax_envs import make_jax_env

    env = make_jax_env(env_spec.name, **env_spec.kwargs)
    episode_length = getattr(env, "episode_length", None)
    if episode_length is not None and agent.sr.memory_capacity < episode_length:
        print(
            f"note: agent.sr.memory_capacity {agent.sr.memory_capacity} < episode length {episode_length}: "
            "the memory wraps and forgets the episode's first states", flush=True
        )
    chunks = impala_chunks(agent, env_spec, frames=frames, run=run)
    config = resolve_impala_sr(agent, env_spec, frames=frames, run=run).config
    trainer = make_sr_trainer(env, config, updates_per_chunk=run.updates_per_chunk)
    return TrainerProgram(
        init_batch=trainer.init_batch,
        run_chunk_batch=trainer.run_chunk_batch,
        num_chunks=chunks.num_chunks,
        updates_per_chunk=chunks.updates_per_chunk,
        frames_per_chunk=chunks.frames_per_chunk,
        write_artifacts=_profile_writer(env, config) if has_chain_probe(env) else None,
    )


def build_impala_sr_atari(agent: ImpalaSRAgentSpec, env_spec: AtariEnvSpec, *, frames: int, run: RunSpec) -> TrainerProgram:
    """IMPALA+SR on Atari: actor threads (or the lagged synchronous actor) carrying the episodic memory, and the
    SR learner; one seed per job."""
    from rlrepro.agents.impala_sr.host_trainer import HostImpalaSRTrainer

    chunks = impala_chunks(agent, env_spec, frames=frames, run=run)
    setup = resolve_impala_sr(agent, env_spec, frames=frames, run=run)
    trainer = HostImpalaSRTrainer(setup.config, env_spec, setup.actor, updates_per_chunk=run.updates_per_chunk)
    return one_seed_program(trainer, chunks)


def _profile_writer(env: Any, config: ImpalaSRConfig) -> Any:
    """Write ``sr_profile.json`` per run: c(s) at every chain position with the final parameters."""
    from rlrepro.agents.impala_sr.loop import contribution_profile
    from rlrepro.agents.impala_sr.networks import make_sr_network

    network = make_sr_network(config, env.num_actions)
    profile_fn = jax.jit(jax.vmap(lambda params: contribution_profile(network, params, env)))

    def write(state: Any, run_dirs: list[Path]) -> None:
        profiles = np.asarray(jax.device_get(profile_fn(state.learner.params)))
        for run_dir, profile in zip(run_dirs, profiles):
            data = {
                "what": "c(s) at each chain position, final parameters (Raposo et al. 2021, Fig. 3c)",
                "positions": list(range(len(profile))),
                "contribution": [round(float(x), 6) for x in profile],
                "start": int(env.centre),
                "trigger": int(env.trigger_position),
                "sr_enabled": config.sr.enabled,
            }
            (Path(run_dir) / "sr_profile.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    return write
