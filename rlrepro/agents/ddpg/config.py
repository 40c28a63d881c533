"""Hyper-parameters of DDPG as the ReF-ER paper runs it (App. A; notes §1.4, §2.2)."""

from __future__ import annotations

import dataclasses

from rlrepro.training.refer_host import ReplayAgentConfig


@dataclasses.dataclass(frozen=True)
class DDPGConfig(ReplayAgentConfig):
    """Everything the DDPG learner and host loop need (``from_spec``: the shared derivation)."""

    policy_learning_rate: float = 1e-5
    critic_learning_rate: float = 1e-4
    critic_weight_decay: float = 1e-4
    anneal_learning_rate: bool = True
    batch_size: int = 128
    target_rate: float = 0.01
    sigma: float = 0.2
    exploration: str = "gaussian"
    ou_theta: float = 0.15
    ou_behaviour: str = "step"
