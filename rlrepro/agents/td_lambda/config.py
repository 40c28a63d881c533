"""TD(lambda)'s chunk plan (no JAX: planning reads it); the configuration is ``learner.TdLambdaConfig``."""

from __future__ import annotations

from typing import Any

from rlrepro.training.program import ChunkPlan, update_chunks


def td_lambda_chunks(agent: Any, env_spec: Any, *, frames: int, run: Any) -> ChunkPlan:
    """TD(lambda): one counted update is ``trajectories_per_update`` trajectories of ``unroll_length`` steps."""
    return update_chunks(frames, agent.unroll_length * agent.trajectories_per_update * env_spec.frames_per_step, run)
