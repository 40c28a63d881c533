"""Agent specs: one model per agent kind, selected by ``kind`` (a discriminated union).

To add an agent: write its spec model in a module here (an ``AgentSpecModel`` with ``kind: Literal["<kind>"]``),
add it to ``AGENT_SPECS`` below, and register its trainer in ``rlrepro.agents.registry``.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from rlrepro.specs.agents.baselines import ACERAgentSpec, PPOAgentSpec
from rlrepro.specs.agents.common import AgentSpecModel, ConvNetworkSpec, MLPNetworkSpec, NetworkSpec, RMSPropSpec
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

# Every agent kind's spec model, in the order of the JSON schema's union. Adding a kind: its model here (an
# ``AgentSpecModel``: its fields, and what the layers above need to know of it) and its trainer in
# ``rlrepro.agents.registry`` (tests/agents/test_spec_fields_reach_configs.py checks that the two name the same kinds).
AGENT_SPECS: tuple[type[AgentSpecModel], ...] = (
    ImpalaAgentSpec, FrodoAgentSpec, TdLambdaAgentSpec, DQNAgentSpec, LossSearchAgentSpec, ImpalaSRAgentSpec,
    VRacerAgentSpec, DDPGAgentSpec, NAFAgentSpec,
    PPOAgentSpec, ACERAgentSpec,
)
AgentSpec = Annotated[Union[AGENT_SPECS], Field(discriminator="kind")]
AGENT_KINDS: tuple[str, ...] = tuple(model.kind_name() for model in AGENT_SPECS)

# Fields an agent kind cannot honour at any value but one: the spec model rejects other values (naming the
# field), so nothing is silently ignored. Every other field changes the agent's resolved configuration
# (tests/agents/test_spec_fields_reach_configs.py walks them all).
FIXED_FIELDS: dict[str, dict[str, str]] = {m.kind_name(): m.fixed_fields for m in AGENT_SPECS if m.fixed_fields}
# Blocks added after runs had finished: left out of the config hash when null (``rlrepro.workflow.config_hash``).
NULL_ADDITIONS: dict[str, frozenset[str]] = {m.kind_name(): m.null_additions for m in AGENT_SPECS if m.null_additions}
# Kinds whose jobs never use an accelerator (``rlrepro.cluster``).
CPU_ONLY_KINDS: frozenset[str] = frozenset(m.kind_name() for m in AGENT_SPECS if m.cpu_only)

__all__ = [
    "ACERAgentSpec",
    "AGENT_KINDS",
    "AGENT_SPECS",
    "AgentSpecModel",
    "CPU_ONLY_KINDS",
    "AgentSpec",
    "FIXED_FIELDS",
    "NULL_ADDITIONS",
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
