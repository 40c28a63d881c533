"""TD(lambda) prediction agent spec: the baseline of FRODO's random-walk experiment (Xu et al. 2020, Fig. 2b)."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field

from rlrepro.specs.agents.common import AgentSpecModel, MLPNetworkSpec, RMSPropSpec
from rlrepro.specs.agents.frodo import TabularNetworkSpec
from rlrepro.specs.common import PositiveCount, SpecModel

TdLambdaNetworkSpec = Annotated[Union[TabularNetworkSpec, MLPNetworkSpec], Field(discriminator="kind")]


class TdLambdaAgentSpec(AgentSpecModel):
    """Forward-view TD(lambda): one update per trajectory towards its lambda-returns (Sutton & Barto §12.1)."""

    kind: Literal["td_lambda"] = Field(description="Agent kind.")
    network: TdLambdaNetworkSpec = Field(
        default_factory=MLPNetworkSpec, description="The value network: tabular (the random walk) or mlp."
    )
    optimizer: RMSPropSpec = Field(description="Optimiser (FRODO App. A.1: learning rate 0.1).")
    trace_lambda: float = Field(ge=0, le=1, description="lambda (Fig. 2b: 0, 0.4, 0.8, 0.9, 0.99, 1).")
    discount: float = Field(1.0, ge=0, le=1, description="Discount gamma (ours: 1).")
    unroll_length: PositiveCount = Field(description="Steps per trajectory (random walk: 16).")
    trajectories_per_update: PositiveCount = Field(
        6,
        description=(
            "Trajectories (each one TD update) per counted update; 6 = FRODO's M + 1, so both agents log at the same "
            "frames and count the same environment steps per update."
        ),
    )
