"""Pydantic models of the experiment specs, and their loading and validation."""

from rlrepro.specs.agents import AgentSpec, ImpalaAgentSpec
from rlrepro.specs.common import SCALES, Scale
from rlrepro.specs.environments import DmlabEnvSpec, EnvSpec, JaxEnvSpec
from rlrepro.specs.experiment import (
    AboveTrivialClaim,
    AggregateClaim,
    ClaimSpec,
    ExperimentSpec,
    OrderingClaim,
    ScaleSpec,
    ThresholdClaim,
    VariantSpec,
)
from rlrepro.specs.loading import (
    SpecError,
    apply_overrides,
    find_spec_files,
    load_spec,
    load_specs,
    resolve_agent,
    resolve_env,
    spec_hash,
    validate_spec,
)

__all__ = [
    "SCALES",
    "AboveTrivialClaim",
    "AggregateClaim",
    "AgentSpec",
    "ClaimSpec",
    "DmlabEnvSpec",
    "EnvSpec",
    "ExperimentSpec",
    "ImpalaAgentSpec",
    "JaxEnvSpec",
    "OrderingClaim",
    "Scale",
    "ScaleSpec",
    "SpecError",
    "ThresholdClaim",
    "VariantSpec",
    "apply_overrides",
    "find_spec_files",
    "load_spec",
    "load_specs",
    "resolve_agent",
    "resolve_env",
    "spec_hash",
    "validate_spec",
]
