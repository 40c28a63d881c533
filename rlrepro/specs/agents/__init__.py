"""Agent specs: one model per agent kind, selected by ``kind`` (a discriminated union).

To add an agent: write its spec model in a module here (``kind: Literal["<kind>"]``), add it to
``AgentSpec`` below, and register its trainer in ``rlrepro.agents.registry``.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from rlrepro.specs.agents.common import ConvNetworkSpec, MLPNetworkSpec, NetworkSpec, RMSPropSpec
from rlrepro.specs.agents.dqn import DQNAgentSpec, DQNLossSpec, LossSearchAgentSpec
from rlrepro.specs.agents.frodo import FrodoAgentSpec
from rlrepro.specs.agents.impala import ImpalaAgentSpec, ImpalaLossSpec
from rlrepro.specs.agents.impala_sr import ImpalaSRAgentSpec, SRNetworkSpec, SyntheticReturnsSpec
from rlrepro.specs.agents.td_lambda import TdLambdaAgentSpec
from rlrepro.specs.agents.refer import DDPGAgentSpec, NAFAgentSpec, VRacerAgentSpec

AgentSpec = Annotated[
    Union[
        ImpalaAgentSpec, FrodoAgentSpec, TdLambdaAgentSpec, DQNAgentSpec, LossSearchAgentSpec, ImpalaSRAgentSpec,
        VRacerAgentSpec, DDPGAgentSpec, NAFAgentSpec,
    ],
    Field(discriminator="kind"),
]
AGENT_KINDS: tuple[str, ...] = (
    "impala", "frodo", "td_lambda", "dqn", "loss_search", "impala_sr", "vracer", "ddpg", "naf",
)

__all__ = [
    "AGENT_KINDS",
    "AgentSpec",
    "ConvNetworkSpec",
    "DDPGAgentSpec",
    "DQNAgentSpec",
    "DQNLossSpec",
    "LossSearchAgentSpec",
    "FrodoAgentSpec",
    "ImpalaAgentSpec",
    "ImpalaLossSpec",
    "ImpalaSRAgentSpec",
    "SRNetworkSpec",
    "SyntheticReturnsSpec",
    "MLPNetworkSpec",
    "NAFAgentSpec",
    "NetworkSpec",
    "RMSPropSpec",
    "TdLambdaAgentSpec",
    "VRacerAgentSpec",
]
