"""``build_td_lambda``: a TD(lambda) spec and a pure-JAX prediction environment spec -> the runner's
``TrainerProgram`` (the loop is ``loop.py``), and ``resolve_td_lambda``, the one place the spec becomes the run's
configuration."""

from __future__ import annotations

from typing import Any

from rlrepro.agents.td_lambda.config import TdLambdaConfig, td_lambda_chunks
from rlrepro.agents.td_lambda.loop import make_td_lambda_trainer
from rlrepro.training.optim import OptimizerConfig
from rlrepro.training.program import TrainerProgram


def resolve_td_lambda(agent: Any, env_spec: Any, *, frames: int, run: Any) -> TdLambdaConfig:
    """The one place a TD(lambda) spec becomes its run's configuration (used by ``build_td_lambda``)."""
    chunks = td_lambda_chunks(agent, env_spec, frames=frames, run=run)
    total_steps = chunks.num_chunks * chunks.updates_per_chunk * agent.trajectories_per_update
    return TdLambdaConfig(
        trace_lambda=agent.trace_lambda,
        optimizer=OptimizerConfig.from_spec(agent.optimizer, total_steps, learning=agent.learning),
        unroll_length=agent.unroll_length,
        discount=agent.discount,
        network=agent.network.kind,
        hidden_sizes=tuple(getattr(agent.network, "hidden_sizes", (64, 64))),
        trajectories_per_update=agent.trajectories_per_update,
    )


def build_td_lambda(agent: Any, env_spec: Any, *, frames: int, run: Any) -> Any:
    """TD(lambda) on a pure-JAX prediction environment (one with ``true_values``, e.g. the random walk)."""
    from rlrepro.environments.availability import require_backend
    from rlrepro.environments.errors import UnsupportedSetupError
    from rlrepro.environments.jax_envs import make_jax_env
    from rlrepro.specs import JaxEnvSpec

    require_backend(env_spec)
    if not isinstance(env_spec, JaxEnvSpec):
        raise UnsupportedSetupError(f"td_lambda runs on pure-JAX prediction environments, not '{env_spec.kind}'")
    env = make_jax_env(env_spec.name, **env_spec.kwargs)
    if not hasattr(env, "true_values"):
        raise UnsupportedSetupError(f"td_lambda needs a prediction environment with true values; '{env_spec.name}' has none")
    chunks = td_lambda_chunks(agent, env_spec, frames=frames, run=run)
    config = resolve_td_lambda(agent, env_spec, frames=frames, run=run)
    trainer = make_td_lambda_trainer(env, config, updates_per_chunk=chunks.updates_per_chunk)
    return TrainerProgram(trainer.init_batch, trainer.run_chunk_batch, chunks.num_chunks, chunks.updates_per_chunk,
                          chunks.frames_per_chunk)
