"""Hyper-parameters of continuous ACER as the ReF-ER paper runs it (App. A; see ``rlrepro.specs.agents.baselines``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from rlrepro.specs.agents.baselines import ACERAgentSpec
from rlrepro.specs.agents.common import defaults_from


@dataclasses.dataclass(frozen=True)
@defaults_from(ACERAgentSpec)
class ACERConfig:
    """Everything the ACER learner, actor and host loop need; frozen (a jit static argument)."""

    hidden_sizes: tuple[int, ...]
    init_std: float
    truncation: float
    policy_learning_rate: float
    value_learning_rate: float
    advantage_learning_rate: float
    anneal_a: float
    discount: float
    capacity: int
    n_start: int
    batch_episodes: int
    window: int
    importance_clip: float
    trust_region_delta: float
    average_rate: float
    advantage_samples: int
    refresh_period: int
    learning: bool  # false: the control arm (training.optim.learning_or_frozen)
    adam_eps: float = 1e-8  # not a spec field: optax's default, as every ReF-ER agent here

    @classmethod
    def from_spec(cls, agent: Any) -> "ACERConfig":
        """The one place an ACER spec becomes its config: every spec field maps to the config field of the same
        name (a spec field the config lacks is a TypeError, never dropped)."""
        data = agent.model_dump(exclude={"kind", "hidden_sizes"})
        return cls(hidden_sizes=tuple(agent.hidden_sizes), **data)
