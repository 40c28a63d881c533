"""Agent specs: one model per agent kind, selected by ``kind`` (a discriminated union).

To add an agent: write its spec model in a module here (``kind: Literal["<kind>"]``), add it to
``AgentSpec`` below, and register its trainer in ``rlrepro.agents.registry``.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from rlrepro.specs.agents.common import ConvNetworkSpec, MLPNetworkSpec, NetworkSpec, RMSPropSpec
from rlrepro.specs.agents.impala import ImpalaAgentSpec, ImpalaLossSpec

AgentSpec = Annotated[Union[ImpalaAgentSpec], Field(discriminator="kind")]
AGENT_KINDS: tuple[str, ...] = ("impala",)

__all__ = [
    "AGENT_KINDS",
    "AgentSpec",
    "ConvNetworkSpec",
    "ImpalaAgentSpec",
    "ImpalaLossSpec",
    "MLPNetworkSpec",
    "NetworkSpec",
    "RMSPropSpec",
]
