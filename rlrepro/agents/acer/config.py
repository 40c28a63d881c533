"""Hyper-parameters of continuous ACER as the ReF-ER paper runs it (App. A; see ``rlrepro.specs.agents.baselines``)."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class ACERConfig:
    """Everything the ACER learner, actor and host loop need; frozen (a jit static argument)."""

    hidden_sizes: tuple[int, ...] = (128, 128)
    init_std: float = 0.447214
    truncation: float = 3.0
    policy_learning_rate: float = 1e-5
    value_learning_rate: float = 1e-4
    advantage_learning_rate: float = 1e-4
    anneal_a: float = 5e-7
    discount: float = 0.995
    capacity: int = 100_000
    n_start: int = 100_000
    batch_episodes: int = 24
    window: int = 200
    importance_clip: float = 5.0
    trust_region_delta: float = 1.0
    average_rate: float = 0.001
    advantage_samples: int = 5
    refresh_period: int = 1000
    adam_eps: float = 1e-8  # not a spec field: optax's default, as every ReF-ER agent here

    @classmethod
    def from_spec(cls, agent: Any) -> "ACERConfig":
        """The one place an ACER spec becomes its config: every spec field maps to the config field of the same
        name (a spec field the config lacks is a TypeError, never dropped)."""
        data = agent.model_dump(exclude={"kind", "hidden_sizes"})
        return cls(hidden_sizes=tuple(agent.hidden_sizes), **data)
