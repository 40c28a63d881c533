"""IMPALA agent spec (Espeholt et al. 2018)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from rlrepro.specs.agents.common import AgentSpecModel, MLPNetworkSpec, NetworkSpec, RMSPropSpec
from rlrepro.specs.common import PositiveCount, SpecModel


class ImpalaLossSpec(SpecModel):
    """The IMPALA actor-critic loss with V-trace (section 4) and its off-policy corrections (section 5.2.2)."""

    discount: float = Field(0.99, ge=0, le=1, description="Discount gamma.")
    baseline_cost: float = Field(
        0.5,
        ge=0,
        description="Baseline loss scaling; applied as baseline_cost * 0.5 * sum of squared errors, as the released code does.",
    )
    entropy_cost: float = Field(ge=0, description="Weight of the entropy bonus (Table G.1: 0.01 on Atari).")
    reward_clip: float | None = Field(
        1.0, gt=0, description="Clip rewards to [-c, c] in the learner (Table G.1: 1); null: no clipping."
    )
    reward_transform: Literal["clip", "soft_asymmetric_code", "soft_asymmetric_paper"] = Field(
        "clip",
        description=(
            "clip: clip to [-reward_clip, reward_clip] (Atari, single-task DMLab); soft_asymmetric_code: the released "
            "code's DMLab-30 squashing 5*tanh(r/5) with 0.3 on negatives; soft_asymmetric_paper: Fig. D.1's formula."
        ),
    )
    correction: Literal["vtrace", "one_step_is", "epsilon", "none"] = Field(
        "vtrace",
        description=(
            "Off-policy correction (section 5.2.2): vtrace; one_step_is (uncorrected value targets, pg advantage times "
            "the clipped importance weight); epsilon (no correction, log(pi + 1e-6) in the pg term); none."
        ),
    )
    rho_bar: float = Field(1.0, gt=0, description="V-trace truncation rho-bar of the value target (paper: 1).")
    c_bar: float = Field(1.0, gt=0, description="V-trace trace-cutting level c-bar (paper and code: 1).")
    pg_rho_bar: float = Field(1.0, gt=0, description="Truncation of the importance weight in the policy gradient (code: 1).")
    trace_lambda: float = Field(1.0, ge=0, le=1, description="V-trace lambda (Remark 2): c_i = lambda * min(c_bar, rho_i).")
    epsilon_correction: float = Field(1e-6, gt=0, description="Epsilon added to pi(a) by the epsilon correction.")


class ActorSpec(SpecModel):
    """How acting is organised on host environments (Atari); pure-JAX tasks always act synchronously in the jitted loop."""

    mode: Literal["threaded", "sync", "a2c_sync_traj", "a3c"] = Field(
        "threaded",
        description=(
            "threaded: actor threads fill a bounded queue while the learner updates (IMPALA's single-machine mode; "
            "the lag that occurs is measured); sync: one unroll of all environments per update, stepped together "
            "with one batched forward pass per step, with parameters exactly policy_lag updates old (policy_lag 0: "
            "Table 1's batched A2C, sync step); a2c_sync_traj: Table 1's batched A2C with synchronised trajectories "
            "(each actor thread plays a whole unroll, the learner waits for all, updates once, the actors restart "
            "with the new parameters; batch_size must equal the environments' num_envs); a3c: Table 1's A3C "
            "(each actor thread is a worker that computes the gradient of its own unroll at its own parameter "
            "snapshot and applies it to the shared parameters and RMSProp state; batch_size must equal num_envs, "
            "so that one gradient per worker consumes the frames of one update)."
        ),
    )
    num_actors: PositiveCount = Field(
        1, description="Actor threads; the environment's num_envs are split among them (multi-task: per member and game)."
    )
    queue_size: PositiveCount = Field(2, description="Capacity of the unroll queue (in unrolls).")


class ReplaySpec(SpecModel):
    """The learner's experience replay of the off-policy comparison (section 5.2.2, Table D.3).

    Fixed as the paper gives it: uniform sampling (with replacement) and first-in-first-out removal of whole
    trajectories. Resolved where the paper is silent (notes section 2.5): the batch keeps batch_size rows,
    round(fraction * batch_size) of them replayed and the rest new unrolls; each update's new unrolls are stored first, then the
    replayed rows are drawn among the stored trajectories other than these; the first update (empty buffer) masks the replayed rows out.
    """

    fraction: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="Share of each learner batch drawn uniformly from the replay buffer (paper: 0.5 with replay; 0: no replay).",
    )
    capacity: PositiveCount = Field(
        10_000, description="Trajectories the FIFO buffer holds; the oldest is removed first (Table D.3: 10,000)."
    )


class PBTSpec(SpecModel):
    """Population-based training as IMPALA ran it (App. F; Table G.1 for the Atari-57 multi-task agent)."""

    enabled: bool = Field(
        True,
        description=(
            "false: no PBT, one member with the optimizer's and loss's values (the other fields are then unused; "
            "a switch rather than null so that a scale's overrides of the population apply to the PBT variant only)."
        ),
    )
    population_size: PositiveCount = Field(24, description="Members trained in parallel (Table G.1: 24).")
    burn_in_frames: int = Field(20_000_000, ge=0, description="Frames per member before the first exploit/explore (App. F: 20M).")
    ready_episodes: PositiveCount = Field(
        5_000, description="Finished training episodes (all games) between a member's exploit/explore steps (App. F: 5,000)."
    )
    copy_threshold: float = Field(
        0.05, ge=0, description="Copy a random other member whose fitness (mean capped HNS) is higher by more than this (App. F: 5%)."
    )
    perturb_probability: float = Field(0.33, ge=0, le=1, description="Chance each adapted hyper-parameter is perturbed (App. F: 33%).")
    perturb_factor: float = Field(1.2, gt=1, description="Perturbation: multiply by this or by its inverse (App. F: 1.2).")
    adapted: list[Literal["learning_rate", "entropy_cost", "rmsprop_epsilon", "max_grad_norm"]] = Field(
        default_factory=lambda: ["learning_rate", "entropy_cost", "rmsprop_epsilon", "max_grad_norm"],
        min_length=1,
        description="Adapted hyper-parameters (§5.3.2: all four for Atari-57; DMLab-30 leaves out max_grad_norm).",
    )
    initial_learning_rate: list[float] = Field(
        default_factory=lambda: [5e-6, 5e-3], min_length=2, max_length=2,
        description="[low, high] of the log-uniform initial learning rates (Table D.1).",
    )
    initial_entropy_cost: list[float] = Field(
        default_factory=lambda: [5e-5, 1e-2], min_length=2, max_length=2,
        description="[low, high] of the log-uniform initial entropy costs (Table D.1).",
    )
    initial_rmsprop_epsilon: list[float] = Field(
        default_factory=lambda: [1e-1, 1e-3, 1e-5, 1e-7], min_length=1,
        description="Categorical choices of the initial RMSProp epsilon (Table D.1).",
    )
    seed: int = Field(0, ge=0, description="Seeds the initial draws and the exploit/explore choices (with the run's seed).")

    @model_validator(mode="after")
    def _ranges_are_positive_and_ordered(self) -> "PBTSpec":
        for name in ("initial_learning_rate", "initial_entropy_cost"):
            low, high = getattr(self, name)
            if not 0 < low <= high:
                raise ValueError(f"{name} must be [low, high] with 0 < low <= high, got {[low, high]}")
        if any(eps <= 0 for eps in self.initial_rmsprop_epsilon):
            raise ValueError(f"initial_rmsprop_epsilon must be > 0, got {self.initial_rmsprop_epsilon}")
        return self


class MultiTaskSpec(SpecModel):
    """One agent on several games at once (§5.3): a fixed number of actors per game (``actor.num_actors`` per
    member and game), one learner per member."""

    pbt: PBTSpec = Field(
        default_factory=lambda: PBTSpec(enabled=False), description="Population-based training (pbt.enabled: false: none)."
    )


class ImpalaAgentSpec(AgentSpecModel):
    """IMPALA: V-trace actor-critic (Espeholt et al. 2018)."""

    kind: Literal["impala"] = Field(description="Agent kind.")
    null_additions: ClassVar[frozenset[str]] = frozenset({"multitask"})  # the multi-task agent with PBT
    network: NetworkSpec = Field(default_factory=MLPNetworkSpec, description="Actor-critic network.")
    optimizer: RMSPropSpec = Field(description="Optimiser.")
    loss: ImpalaLossSpec = Field(description="Loss and off-policy correction.")
    unroll_length: PositiveCount = Field(description="Unroll length n (trajectory length T) per batch entry.")
    batch_size: PositiveCount = Field(description="Trajectories per learner update (and parallel environments).")
    actor: ActorSpec = Field(default_factory=ActorSpec, description="Actor organisation on host environments.")
    policy_lag: int = Field(
        0,
        ge=0,
        description="Behaviour policy uses parameters this many updates old (0: on-policy), so off-policy correction matters on one machine.",
    )
    replay: ReplaySpec = Field(
        default_factory=ReplaySpec,
        description="Learner-side experience replay (section 5.2.2, pure-JAX tasks only); fraction 0: none.",
    )
    multitask: MultiTaskSpec | None = Field(
        None,
        description=(
            "Multi-task mode (§5.3.2): one agent trained on every environment of the scale at once (Atari, full "
            "18-action set), optionally with PBT; null: one agent per environment."
        ),
    )

    @model_validator(mode="after")
    def _pbt_adapts_a_clip_threshold(self) -> "ImpalaAgentSpec":
        pbt = self.multitask.pbt if self.multitask else None
        if pbt and pbt.enabled and "max_grad_norm" in pbt.adapted and self.optimizer.max_grad_norm is None:
            raise ValueError("multitask.pbt.adapted has max_grad_norm: set optimizer.max_grad_norm (Table G.1: 40)")
        return self
