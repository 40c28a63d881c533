"""Hyper-parameters of PPO as the ReF-ER paper runs it (App. A; see ``rlrepro.specs.agents.baselines``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from rlrepro.specs.agents.baselines import PPOAgentSpec
from rlrepro.specs.agents.common import defaults_from


@dataclasses.dataclass(frozen=True)
@defaults_from(PPOAgentSpec)
class PPOConfig:
    """Everything the PPO learner, actor and host loop need; frozen (a jit static argument)."""

    hidden_sizes: tuple[int, ...]
    init_log_std: float
    policy_learning_rate: float
    value_learning_rate: float
    anneal_a: float
    adam_eps: float
    discount: float
    gae_lambda: float
    clip_epsilon: float
    rollout_steps: int
    epochs: int
    minibatch_size: int
    normalize_advantages: bool
    obs_normalization: bool
    obs_clip: float
    learning: bool  # false: the control arm (training.optim.learning_or_frozen)

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
