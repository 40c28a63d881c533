"""Hyper-parameters of DDPG as the ReF-ER paper runs it (App. A; notes §1.4, §2.2)."""

from __future__ import annotations

import dataclasses

from rlrepro.agents.refer.rules import ReferConfig


@dataclasses.dataclass(frozen=True)
class DDPGConfig:
    """Everything the DDPG learner and host loop need; frozen (a safe jit static argument)."""

    rules: ReferConfig = ReferConfig()
    capacity: int = 262_144
    n_start: int = 262_144
    refresh_period: int = 1000
    hidden_sizes: tuple[int, ...] = (128, 128)
    policy_learning_rate: float = 1e-5
    critic_learning_rate: float = 1e-4
    critic_weight_decay: float = 1e-4
    anneal_learning_rate: bool = True
    adam_eps: float = 1e-8
    discount: float = 0.995
    batch_size: int = 128
    target_rate: float = 0.01
    sigma: float = 0.2
    exploration: str = "gaussian"
    ou_theta: float = 0.15

    @classmethod
    def from_spec(cls, agent) -> "DDPGConfig":
        """The one place a ``DDPGAgentSpec`` becomes a config."""
        data = agent.model_dump(exclude={"kind", "rules", "replay", "hidden_sizes"})
        return cls(
            rules=ReferConfig.from_spec(agent.rules),
            capacity=agent.replay.capacity,
            n_start=agent.replay.n_start,
            refresh_period=agent.replay.refresh_period,
            hidden_sizes=tuple(agent.hidden_sizes),
            **data,
        )
