"""Hyper-parameters of NAF as the ReF-ER paper runs it (App. A; notes §1.4)."""

from __future__ import annotations

import dataclasses

from rlrepro.specs.agents.common import defaults_from
from rlrepro.specs.agents.refer import NAFAgentSpec
from rlrepro.training.refer_config import ReplayAgentConfig


@dataclasses.dataclass(frozen=True)
@defaults_from(NAFAgentSpec)
class NAFConfig(ReplayAgentConfig):
    """Everything the NAF learner and host loop need (``from_spec``: the shared derivation)."""

    learning_rate: float
    anneal_learning_rate: bool
    batch_size: int
    target_rate: float
    sigma: float
    rule2_gradient: str
    learning: bool  # false: the control arm (training.optim.learning_or_frozen)
    exploration: str = "gaussian"  # App. A: Gaussian for every NAF variant (not a spec field)
    ou_theta: float = 0.15  # unused: no OU exploration for NAF

    @property
    def policy_learning_rate(self) -> float:
        """The rate the shared host loop reports and uses as eta(t) for beta (NAF has one network)."""
        return self.learning_rate
