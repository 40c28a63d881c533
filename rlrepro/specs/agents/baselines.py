"""Agent specs of the ReF-ER paper's comparison baselines for V-RACER (Novati & Koumoutsakos, ICML 2019, §5.3,
Fig. 4, App. A): PPO (Schulman et al. 2017).

Values are App. A's ("We tuned the hyper-parameters as Henderson et al. (2017)"); where App. A is silent the field
says whose setting it takes (the PPO paper's MuJoCo settings, §6.1 and Table 3, or openai/baselines' PPO, which
Henderson et al. ran).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from rlrepro.specs.common import PositiveCount, SpecModel


class PPOAgentSpec(SpecModel):
    """PPO with the clipped surrogate (eq. 7), GAE(lambda) and separate policy and value MLPs (App. A)."""

    kind: Literal["ppo"] = Field(description="Agent kind.")
    hidden_sizes: list[PositiveCount] = Field(
        default_factory=lambda: [64, 64], min_length=1,
        description="tanh MLP widths of the policy and of the value network (App. A: 2x64; tanh: PPO §6.1).",
    )
    init_log_std: float = Field(
        0.0, description="Initial log std of the state-independent Gaussian policy (not in App. A; PPO §6.1 and "
        "openai/baselines: 0, i.e. std 1 in network units, actions scaled by (upper - lower)/2 as for V-RACER).",
    )
    policy_learning_rate: float = Field(1e-4, gt=0, description="Policy Adam step size (App. A: 1e-4).")
    value_learning_rate: float = Field(3e-4, gt=0, description="Value Adam step size (App. A: 3e-4).")
    anneal_a: float = Field(
        5e-7, ge=0, description="A of eq. 13's annealing eta(t) = eta / (1 + A t), t = environment steps, of both "
        "learning rates (App. A: 'the same annealing as used in the other experiments', A = 5e-7); 0: constant.",
    )
    adam_eps: float = Field(1e-8, gt=0, description="Adam epsilon (not stated; optax default).")
    discount: float = Field(0.995, ge=0, lt=1, description="gamma (App. A: 0.995; the PPO paper 0.99).")
    gae_lambda: float = Field(0.97, ge=0, le=1, description="GAE lambda (App. A: 0.97; the PPO paper 0.95).")
    clip_epsilon: float = Field(0.2, gt=0, lt=1, description="epsilon of the clipped surrogate, eq. 7 (App. A: 0.2).")
    rollout_steps: PositiveCount = Field(
        2048, description="Environment steps per seed between updates, the horizon T (App. A: 2048)."
    )
    epochs: PositiveCount = Field(10, description="Optimiser epochs over each rollout (App. A: 10).")
    minibatch_size: PositiveCount = Field(64, description="Steps per minibatch; must divide rollout_steps (App. A: 64).")
    normalize_advantages: bool = Field(
        True, description="Standardise the advantages of each rollout (not in App. A; openai/baselines' PPO does)."
    )
    obs_normalization: bool = Field(
        True, description="Standardise observations with running mean and variance of every observation seen (not "
        "in App. A, which standardises the replay agents' states from N_start samples; openai/baselines' PPO MLP "
        "policy keeps running statistics). Stored observations are the standardised ones the policy acted on.",
    )
    obs_clip: float = Field(5.0, gt=0, description="Standardised observations clipped to +-this (openai/baselines' PPO: 5).")

    @model_validator(mode="after")
    def _whole_minibatches(self) -> "PPOAgentSpec":
        if self.rollout_steps % self.minibatch_size:
            raise ValueError(
                f"minibatch_size {self.minibatch_size} must divide rollout_steps {self.rollout_steps} (every epoch "
                "visits each step of the rollout once, in whole minibatches)"
            )
        return self
