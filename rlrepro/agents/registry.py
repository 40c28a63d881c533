"""Agent kind -> trainer builder: the one place an agent is registered.

A builder turns a resolved agent spec, an environment spec and a frame budget into a
:class:`TrainerProgram`: batched (over seeds) ``init`` and ``run_chunk`` functions, and how many
chunks the budget takes. The runner in ``rlrepro.training.runner`` is agent-agnostic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from rlrepro.environments.availability import require_backend
from rlrepro.environments.errors import UnsupportedSetupError
from rlrepro.specs import ImpalaAgentSpec, JaxEnvSpec
from rlrepro.specs.experiment import RunSpec


class TrainerProgram(NamedTuple):
    """What the runner needs: state init over a batch of seed keys, one chunk of training, and sizes.

    ``run_chunk_batch`` returns (state, metrics) where metrics is a NamedTuple of [num_seeds] arrays
    with at least ``frames``, ``episodes`` and ``mean_return``.
    """

    init_batch: Callable[[Any], Any]
    run_chunk_batch: Callable[[Any], tuple[Any, Any]]
    num_chunks: int
    updates_per_chunk: int
    frames_per_chunk: int


def impala_config(agent: ImpalaAgentSpec, total_updates: int) -> Any:
    """The IMPALA learner config from its spec."""
    from rlrepro.agents.impala.config import ImpalaConfig

    if agent.network.kind != "mlp":
        raise UnsupportedSetupError(
            f"agent.network.kind '{agent.network.kind}' is not implemented for pure-JAX environments (use 'mlp')"
        )
    if agent.loss.reward_transform != "clip":
        raise UnsupportedSetupError(
            f"agent.loss.reward_transform '{agent.loss.reward_transform}' is only used on DMLab-30; use 'clip'"
        )
    opt, loss = agent.optimizer, agent.loss
    return ImpalaConfig(
        discount=loss.discount,
        unroll_length=agent.unroll_length,
        batch_size=agent.batch_size,
        learning_rate=opt.learning_rate,
        rmsprop_decay=opt.decay,
        rmsprop_epsilon=opt.epsilon,
        rmsprop_momentum=opt.momentum,
        max_grad_norm=opt.max_grad_norm,
        lr_schedule=opt.lr_schedule,
        total_updates=total_updates,
        entropy_cost=loss.entropy_cost,
        baseline_cost=loss.baseline_cost,
        reward_clip=loss.reward_clip,
        correction=loss.correction,
        rho_bar=loss.rho_bar,
        c_bar=loss.c_bar,
        pg_rho_bar=loss.pg_rho_bar,
        lambda_=loss.trace_lambda,
        epsilon_correction=loss.epsilon_correction,
        policy_lag=agent.policy_lag,
        hidden_sizes=tuple(agent.network.hidden_sizes),
    )


def build_impala(agent: ImpalaAgentSpec, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """IMPALA on a pure-JAX environment: the whole chunk of act-then-update steps is one jitted call."""
    require_backend(env_spec)
    if not isinstance(env_spec, JaxEnvSpec):
        raise UnsupportedSetupError(f"IMPALA on '{env_spec.kind}' environments is not implemented yet")
    from rlrepro.environments.jax_envs import make_jax_env
    from rlrepro.training.jax_loop import make_jax_trainer

    frames_per_update = agent.unroll_length * agent.batch_size * env_spec.frames_per_step
    num_chunks = max(1, math.ceil(frames / (frames_per_update * run.updates_per_chunk)))
    config = impala_config(agent, total_updates=num_chunks * run.updates_per_chunk)
    env = make_jax_env(env_spec.name, **env_spec.kwargs)
    trainer = make_jax_trainer(env, config, updates_per_chunk=run.updates_per_chunk)
    return TrainerProgram(
        init_batch=trainer.init_batch,
        run_chunk_batch=trainer.run_chunk_batch,
        num_chunks=num_chunks,
        updates_per_chunk=run.updates_per_chunk,
        frames_per_chunk=frames_per_update * run.updates_per_chunk,
    )


BUILDERS: dict[str, Callable[..., TrainerProgram]] = {"impala": build_impala}


def build_trainer(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """Look up the builder of ``agent.kind``."""
    try:
        builder = BUILDERS[agent.kind]
    except KeyError:
        raise UnsupportedSetupError(f"agent.kind '{agent.kind}': no trainer registered; known {sorted(BUILDERS)}") from None
    return builder(agent, env_spec, frames=frames, run=run)
