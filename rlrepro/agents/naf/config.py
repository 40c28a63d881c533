"""Hyper-parameters of NAF as the ReF-ER paper runs it (App. A; notes §1.4)."""

from __future__ import annotations

import dataclasses

from rlrepro.agents.refer.rules import ReferConfig


@dataclasses.dataclass(frozen=True)
class NAFConfig:
    """Everything the NAF learner and host loop need; frozen (a safe jit static argument)."""

    rules: ReferConfig = ReferConfig()
    capacity: int = 262_144
    n_start: int = 262_144
    refresh_period: int = 1000
    hidden_sizes: tuple[int, ...] = (128, 128)
    learning_rate: float = 1e-4
    anneal_learning_rate: bool = True
    adam_eps: float = 1e-8
    discount: float = 0.995
    batch_size: int = 256
    target_rate: float = 0.01
    sigma: float = 0.2
    exploration: str = "gaussian"  # App. A: Gaussian for every NAF variant (not a spec field)
    ou_theta: float = 0.15  # unused: no OU exploration for NAF

    @property
    def policy_learning_rate(self) -> float:
        """The rate the shared host loop reports and uses as eta(t) for beta (NAF has one network)."""
        return self.learning_rate

    @classmethod
    def from_spec(cls, agent) -> "NAFConfig":
        """The one place a ``NAFAgentSpec`` becomes a config."""
        data = agent.model_dump(exclude={"kind", "rules", "replay", "hidden_sizes"})
        return cls(
            rules=ReferConfig.from_spec(agent.rules),
            capacity=agent.replay.capacity,
            n_start=agent.replay.n_start,
            refresh_period=agent.replay.refresh_period,
            hidden_sizes=tuple(agent.hidden_sizes),
            **data,
        )
