"""Agent specs: one model per agent kind, selected by ``kind`` (a discriminated union).

To add an agent: write its spec model in a module here (``kind: Literal["<kind>"]``), add it to
``AgentSpec`` below, and register its trainer in ``rlrepro.agents.registry``.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from rlrepro.specs.agents.baselines import ACERAgentSpec, PPOAgentSpec
from rlrepro.specs.agents.common import ConvNetworkSpec, MLPNetworkSpec, NetworkSpec, RMSPropSpec
from rlrepro.specs.agents.dqn import DQNAgentSpec, DQNLossSpec, LossSearchAgentSpec
from rlrepro.specs.agents.frodo import FrodoAgentSpec
from rlrepro.specs.agents.impala import ImpalaAgentSpec, ImpalaLossSpec
from rlrepro.specs.agents.impala_sr import (
    ImpalaSRAgentSpec,
    SRAdamSpec,
    SRConvNetworkSpec,
    SRNetworkSpec,
    SyntheticReturnsSpec,
)
from rlrepro.specs.agents.td_lambda import TdLambdaAgentSpec
from rlrepro.specs.agents.refer import DDPGAgentSpec, NAFAgentSpec, VRacerAgentSpec

AgentSpec = Annotated[
    Union[
        ImpalaAgentSpec, FrodoAgentSpec, TdLambdaAgentSpec, DQNAgentSpec, LossSearchAgentSpec, ImpalaSRAgentSpec,
        VRacerAgentSpec, DDPGAgentSpec, NAFAgentSpec,
        PPOAgentSpec, ACERAgentSpec,
    ],
    Field(discriminator="kind"),
]
AGENT_KINDS: tuple[str, ...] = (
    "impala", "frodo", "td_lambda", "dqn", "loss_search", "impala_sr", "vracer", "ddpg", "naf",
    "ppo", "acer",
)

# Fields an agent kind cannot honour at any value but one: the spec model rejects other values (naming the
# field), so nothing is silently ignored. Every other field changes the agent's resolved configuration
# (tests/agents/test_spec_fields_reach_configs.py walks them all).
FIXED_FIELDS: dict[str, dict[str, str]] = {
    "frodo": {
        "optimizer.eps_in_sqrt": "true: FRODO differentiates through RMSProp",
        "meta_optimizer.eps_in_sqrt": "true: FRODO differentiates through RMSProp",
    },
    "dqn": {
        "network.lstm_size": "null on the conv Q-network: DQN is feed-forward",
        "network.last_action_reward_inputs": "false on the conv Q-network: DQN is feed-forward",
    },
    "loss_search": {
        "inner.network.lstm_size": "null on the conv Q-network: DQN is feed-forward",
        "inner.network.last_action_reward_inputs": "false on the conv Q-network: DQN is feed-forward",
    },
}

__all__ = [
    "ACERAgentSpec",
    "AGENT_KINDS",
    "AgentSpec",
    "FIXED_FIELDS",
    "ConvNetworkSpec",
    "DDPGAgentSpec",
    "DQNAgentSpec",
    "DQNLossSpec",
    "LossSearchAgentSpec",
    "FrodoAgentSpec",
    "ImpalaAgentSpec",
    "ImpalaLossSpec",
    "ImpalaSRAgentSpec",
    "SRAdamSpec",
    "SRConvNetworkSpec",
    "SRNetworkSpec",
    "SyntheticReturnsSpec",
    "MLPNetworkSpec",
    "NAFAgentSpec",
    "NetworkSpec",
    "PPOAgentSpec",
    "RMSPropSpec",
    "TdLambdaAgentSpec",
    "VRacerAgentSpec",
]
