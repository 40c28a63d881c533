"""Hyper-parameters of DDPG as the ReF-ER paper runs it (App. A; notes §1.4, §2.2)."""

from __future__ import annotations

import dataclasses

from rlrepro.specs.agents.common import defaults_from
from rlrepro.specs.agents.refer import DDPGAgentSpec
from rlrepro.training.refer_config import ReplayAgentConfig


@dataclasses.dataclass(frozen=True)
@defaults_from(DDPGAgentSpec)
class DDPGConfig(ReplayAgentConfig):
    """Everything the DDPG learner and host loop need (``from_spec``: the shared derivation)."""

    policy_learning_rate: float
    critic_learning_rate: float
    critic_weight_decay: float
    anneal_learning_rate: bool
    batch_size: int
    target_rate: float
    sigma: float
    exploration: str
    ou_theta: float
    learning: bool  # false: the control arm (training.optim.learning_or_frozen)
