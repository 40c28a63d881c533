"""Hyper-parameters of V-RACER (Novati & Koumoutsakos 2019, App. A; notes §2.2)."""

from __future__ import annotations

import dataclasses

from rlrepro.agents.refer.rules import ReferConfig


@dataclasses.dataclass(frozen=True)
class VRacerConfig:
    """Everything the V-RACER learner, actor and host loop need; frozen (a safe jit static argument)."""

    rules: ReferConfig = ReferConfig()
    capacity: int = 262_144
    n_start: int = 262_144
    refresh_period: int = 1000
    hidden_sizes: tuple[int, ...] = (128, 128)
    init_std: float = 0.447214
    learning_rate: float = 1e-4
    adam_eps: float = 1e-8
    discount: float = 0.995
    batch_size: int = 256
    truncation: float = 3.0

    @classmethod
    def from_spec(cls, agent) -> "VRacerConfig":
        """The one place a ``VRacerAgentSpec`` becomes a config."""
        return cls(
            rules=ReferConfig.from_spec(agent.rules),
            capacity=agent.replay.capacity,
            n_start=agent.replay.n_start,
            refresh_period=agent.replay.refresh_period,
            hidden_sizes=tuple(agent.hidden_sizes),
            init_std=agent.init_std,
            learning_rate=agent.learning_rate,
            adam_eps=agent.adam_eps,
            discount=agent.discount,
            batch_size=agent.batch_size,
            truncation=agent.truncation,
        )
