"""Agent specs of the ReF-ER paper's comparison baselines for V-RACER (Novati & Koumoutsakos, ICML 2019, §5.3,
Fig. 4, App. A): PPO (Schulman et al. 2017) and continuous-action ACER (Wang et al. 2017).

Values are App. A's ("We tuned the hyper-parameters as Henderson et al. (2017)"); where App. A is silent the field
says whose setting it takes (the PPO paper's MuJoCo settings, §6.1 and Table 3, or openai/baselines' PPO, which
Henderson et al. ran).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from rlrepro.specs.agents.common import AgentSpecModel
from rlrepro.specs.common import PositiveCount, SpecModel


class PPOAgentSpec(AgentSpecModel):
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


class ACERAgentSpec(AgentSpecModel):
    """Continuous-action ACER (Wang et al. 2017, §5 and Alg. 3) as the ReF-ER paper configures it (App. A): value,
    advantage and policy MLPs, the stochastic dueling network, Retrace with c = min(1, rho^(1/d)), truncation with
    bias correction and the efficient trust region around an average policy network.

    Deviation (recorded here and in the spec): App. A computes each gradient "from 24 uniformly sampled episodes";
    this implementation samples 24 episodes uniformly and takes from each a window of at most ``window`` consecutive
    steps (smarties' ACER, the authors' code, does the same with 200-step windows), so that a gradient has a fixed
    cost on CPU. Every target is computed within the window and bootstraps from V at its end (0 only at a true
    terminal)."""

    kind: Literal["acer"] = Field(description="Agent kind.")
    hidden_sizes: list[PositiveCount] = Field(
        default_factory=lambda: [128, 128], min_length=1,
        description="Softsign MLP widths of each of the three networks, value, advantage and policy (App. A: 2x128; "
        "Softsign and the initialisation of App. A's common MLP).",
    )
    init_std: float = Field(
        0.447214, gt=0, description="Initial std of the state-independent Gaussian policy, Softplus-mapped (not in "
        "App. A's ACER paragraph; smarties' ACER settings explNoise 0.447 = sqrt(0.2), V-RACER's Sigma = 0.2 I).",
    )
    truncation: float = Field(
        3.0, gt=0, description="Behaviour actions drawn from the Gaussian truncated at +-this many std (App. A, for "
        "every agent); rho and the KL use the untruncated density, as for V-RACER.",
    )
    policy_learning_rate: float = Field(
        1e-5, gt=0, description="Policy Adam step size (App. A: 1e-5; Fig. 4 also shows 1e-4).")
    value_learning_rate: float = Field(1e-4, gt=0, description="Value-network Adam step size (App. A: 1e-4).")
    advantage_learning_rate: float = Field(1e-4, gt=0, description="Advantage-network Adam step size (App. A: 1e-4).")
    anneal_a: float = Field(
        5e-7, ge=0, description="A of eq. 13's annealing eta(t) = eta / (1 + A t), t = environment steps, of the three "
        "learning rates (not in App. A's ACER paragraph; smarties' ACER settings epsAnneal 5e-7); 0: constant.",
    )
    discount: float = Field(0.995, ge=0, lt=1, description="gamma (smarties' ACER settings and every ReF-ER agent: 0.995).")
    capacity: PositiveCount = Field(
        100_000, description="Replay memory size in steps, whole episodes FIFO (App. A: 1e5 samples)."
    )
    n_start: PositiveCount = Field(
        100_000, description="Stored steps before the first gradient; the states' standardisation (App. B eqs. "
        "14-15) is taken from them (App. A is silent; smarties' ACER settings start when the memory is full: "
        "minTotObsNum = maxTotObsNum). Must not exceed capacity.",
    )
    batch_episodes: PositiveCount = Field(
        24, description="Episodes sampled uniformly per gradient step (App. A: 24; one gradient step per "
        "environment step).",
    )
    window: PositiveCount = Field(
        200, description="Steps taken from each sampled episode: a window of min(window, episode length) "
        "consecutive steps at a uniform start (a deviation from App. A's whole episodes, see the model's "
        "docstring; smarties' ACER: 200).",
    )
    importance_clip: float = Field(5.0, gt=0, description="c of the truncation with bias correction (App. A: 5).")
    trust_region_delta: float = Field(1.0, gt=0, description="delta of the efficient trust region (App. A: 1).")
    average_rate: float = Field(
        0.001, gt=0, le=1, description="alpha of the average policy network's soft update phi_avg <- alpha phi + "
        "(1 - alpha) phi_avg after every gradient step (App. A: 0.001).",
    )
    advantage_samples: PositiveCount = Field(
        5, description="n actions u_i ~ pi in the stochastic dueling network's mean advantage (App. A: 5)."
    )
    refresh_period: PositiveCount = Field(
        1000, description="Steps between recomputations of the reward scale of App. B eq. 16 (as V-RACER's).",
    )

    @model_validator(mode="after")
    def _start_within_memory(self) -> "ACERAgentSpec":
        if self.n_start > self.capacity:
            raise ValueError(f"n_start {self.n_start} must not exceed capacity {self.capacity} (the memory never "
                             "holds more than capacity steps)")
        return self
