"""Hyper-parameters of PPO as the ReF-ER paper runs it (App. A; see ``rlrepro.specs.agents.baselines``)."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """Everything the PPO learner, actor and host loop need; frozen (a jit static argument)."""

    hidden_sizes: tuple[int, ...] = (64, 64)
    init_log_std: float = 0.0
    policy_learning_rate: float = 1e-4
    value_learning_rate: float = 3e-4
    anneal_a: float = 5e-7
    adam_eps: float = 1e-8
    discount: float = 0.995
    gae_lambda: float = 0.97
    clip_epsilon: float = 0.2
    rollout_steps: int = 2048
    epochs: int = 10
    minibatch_size: int = 64
    normalize_advantages: bool = True
    obs_normalization: bool = True
    obs_clip: float = 5.0

    @classmethod
    def from_spec(cls, agent: Any) -> "PPOConfig":
        """The one place a PPO spec becomes its config: every spec field maps to the config field of the same name
        (a spec field the config lacks is a TypeError, never dropped)."""
        data = agent.model_dump(exclude={"kind", "hidden_sizes"})
        return cls(hidden_sizes=tuple(agent.hidden_sizes), **data)

    @property
    def minibatches(self) -> int:
        """Minibatches per epoch (the spec checks that they are whole)."""
        return self.rollout_steps // self.minibatch_size
