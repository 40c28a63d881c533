"""TD(lambda)'s configuration and chunk plan (no JAX: planning reads them)."""

from __future__ import annotations

import dataclasses
from typing import Any

from rlrepro.specs.agents.common import defaults_from
from rlrepro.specs.agents.td_lambda import TdLambdaAgentSpec
from rlrepro.training.optim import OptimizerConfig
from rlrepro.training.program import ChunkPlan, update_chunks


@dataclasses.dataclass(frozen=True)
@defaults_from(TdLambdaAgentSpec)
class TdLambdaConfig:
    """TD(lambda): ``trace_lambda``, discount, trajectory length, optimiser and value network ("tabular" or "mlp")."""

    trace_lambda: float
    optimizer: OptimizerConfig
    unroll_length: int = 16
    discount: float
    network: str = "tabular"
    hidden_sizes: tuple[int, ...] = (64, 64)
    trajectories_per_update: int

    def make_network(self) -> Any:
        from rlrepro.networks.value import MLPValue, TabularValue  # JAX, where a network is made

        return TabularValue() if self.network == "tabular" else MLPValue(self.hidden_sizes)


def td_lambda_chunks(agent: Any, env_spec: Any, *, frames: int, run: Any) -> ChunkPlan:
    """TD(lambda): one counted update is ``trajectories_per_update`` trajectories of ``unroll_length`` steps."""
    return update_chunks(frames, agent.unroll_length * agent.trajectories_per_update * env_spec.frames_per_step, run)
