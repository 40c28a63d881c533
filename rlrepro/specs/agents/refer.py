"""Agent specs of ReF-ER (Novati & Koumoutsakos, ICML 2019): V-RACER with the ReF-ER replay rules.

Values are the paper's (App. A; notes §2.2); where the paper is silent the field says what the released code
(smarties@2019) does and which one is the default.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from rlrepro.specs.agents.common import AgentSpecModel
from rlrepro.specs.common import PositiveCount, SpecModel


class ReferRulesSpec(SpecModel):
    """The replay rules (§3, eqs. 10-13) and which of them are on."""

    variant: Literal["er", "per", "refer", "refer1", "refer2"] = Field(
        description="er: plain uniform replay; per: rank-based prioritised replay (DDPG and NAF; needs the agent's "
        "'per' block); refer: rules 1 + 2; refer1: rule 1 only (skip far samples); refer2: rule 2 only (KL penalty, "
        "no skipping)."
    )
    c: float = Field(4.0, gt=0, description="C of c_max(t) = 1 + C / (1 + A t) (§3: 4).")
    d: float = Field(0.1, gt=0, lt=1, description="Target far-policy fraction D of eq. 12 (§3: 0.1).")
    a: float = Field(5e-7, ge=0, description="Annealing rate A of eq. 13 (§3: 5e-7; t = environment steps).")
    beta0: float = Field(
        1.0, ge=0, le=1,
        description="Initial beta (not in the paper; smarties@2019 starts at 0 with ReF-ER on, notes §5 item 3; the "
        "notes' CPU runs used 1). Unused by er and refer1 (beta = 1 throughout).",
    )
    beta_rate: Literal["eta_t", "fixed"] = Field(
        "eta_t", description="Rate of the beta update (eq. 12): the annealed learning rate eta(t) (paper), or 'fixed' (smarties@2019: 1e-4)."
    )
    beta_rate_fixed: float = Field(1e-4, gt=0, lt=1, description="The rate when beta_rate is 'fixed' (smarties@2019: 1e-4).")
    kl_direction: Literal["mu_pi", "pi_mu"] = Field(
        "mu_pi",
        description="Rule 2's KL: D_KL(mu || pi) as eq. 11 prints it (default: the paper is what we reproduce), or "
        "D_KL(pi || mu) as smarties@2019 computes it (notes §4 item 1; equal when the variances are).",
    )
    rho_cap: float | None = Field(
        None, gt=1, description="Cap on rho in the policy gradient (§5.3: 1e3 for V-RACER with ReF-ER-2); null: none."
    )


class EpisodeReplaySpec(SpecModel):
    """The replay memory (Alg. 1-2, App. B)."""

    capacity: PositiveCount = Field(262_144, description="N: steps kept; whole episodes leave FIFO while more are stored (§3: 2^18).")
    n_start: PositiveCount = Field(
        262_144, description="Steps collected before the first update; the state statistics come from them (not in the "
        "paper; smarties@2019 2^18 for V-RACER).",
    )
    refresh_period: PositiveCount = Field(
        1000, description="Steps between reward-scale updates (App. B: 1000), each followed by a full recomputation of Q^ret.",
    )


class PrioritisedReplaySpec(SpecModel):
    """Rank-based prioritised replay (Schaul et al. 2016, §3.3-3.4), the ReF-ER paper's PER for DDPG and NAF (Figs. 1
    and 3: "rank-based PER"). The paper gives none of its parameters (notes §1.2)."""

    alpha: float = Field(
        0.7, gt=0, description="P(i) proportional to (1 / rank(i))^alpha (not in the paper; Schaul's rank-based 0.7. "
        "smarties ranks with (1 / rank)^0.5).",
    )
    beta0: float = Field(
        0.5, ge=0, le=1, description="Importance-weight exponent at the start, annealed linearly to 1 over the run "
        "(not in the paper; Schaul's rank-based 0.5, as smarties starts).",
    )
    sort_period: PositiveCount = Field(
        10, description="Updates between re-rankings of the steps whose |TD error| changed (new and evicted steps "
        "re-rank at once); smarties re-ranks every 10 steps, Schaul keeps a binary heap.",
    )


def _priority_matches_variant(agent: "DDPGAgentSpec | NAFAgentSpec") -> None:
    """'per' (rank-based PER) needs the per block and nothing else may have one (it would be ignored)."""
    if agent.rules.variant == "per" and agent.per is None:
        raise ValueError("rules.variant per: rank-based prioritised replay needs the agent's 'per' block (alpha, beta0, sort_period)")
    if agent.rules.variant != "per" and agent.per is not None:
        raise ValueError(f"per: set only with rules.variant per (it is {agent.rules.variant!r}: uniform sampling)")


class VRacerAgentSpec(AgentSpecModel):
    """V-RACER (§2, App. A, Alg. 3): one MLP -> (V, mean), state-independent diagonal std, Retrace/TBC targets."""

    kind: Literal["vracer"] = Field(description="Agent kind.")
    rules: ReferRulesSpec = Field(description="ReF-ER rules and variant.")
    replay: EpisodeReplaySpec = Field(default_factory=EpisodeReplaySpec, description="Replay memory.")
    hidden_sizes: list[PositiveCount] = Field(default_factory=lambda: [128, 128], min_length=1, description="Softsign MLP widths (App. A: 128, 128).")
    init_std: float = Field(0.447214, gt=0, description="Initial policy std (App. A: Sigma = 0.2 I, i.e. std sqrt(0.2)).")
    learning_rate: float = Field(1e-4, gt=0, description="Adam step size eta, annealed by eq. 13 (App. A: 1e-4).")
    adam_eps: float = Field(1e-8, gt=0, description="Adam epsilon (not stated; optax default).")
    discount: float = Field(0.995, ge=0, lt=1, description="gamma (App. A: 0.995).")
    batch_size: PositiveCount = Field(256, description="B: time steps per gradient step (App. A: 256).")
    truncation: float = Field(3.0, gt=0, description="Actions drawn from the normal truncated at +-this many std (App. A: 3).")

    @model_validator(mode="after")
    def _no_prioritised_replay(self) -> "VRacerAgentSpec":
        if self.rules.variant == "per":
            raise ValueError("rules.variant per: V-RACER with PER is not implemented (the paper omits it from Fig. 4: "
                             "'similar or worse than ReF-ER-1'); use er, refer, refer1 or refer2")
        return self


class DDPGAgentSpec(AgentSpecModel):
    """DDPG with ReF-ER (§2, App. A, Alg. 4): tanh policy and critic MLPs with soft-updated targets.

    With ReF-ER the critic is masked on far samples but not beta-scaled (Alg. 4); pi_w = m_w + N(0, sigma^2 I)
    defines rho and the KL. Exploration: Gaussian sigma for the ReF-ER variants, Ornstein-Uhlenbeck for ER and PER;
    the stored behaviour mu is pi at the acting parameters whatever noise explored (§2), so rho and the KL measure
    the policy's movement since it acted, not the noise (``refer_host.TransitionHost._explore``).
    """

    kind: Literal["ddpg"] = Field(description="Agent kind.")
    null_additions: ClassVar[frozenset[str]] = frozenset({"per"})  # rank-based prioritised replay
    rules: ReferRulesSpec = Field(description="ReF-ER rules and variant (er: plain replay).")
    replay: EpisodeReplaySpec = Field(default_factory=EpisodeReplaySpec, description="Replay memory.")
    hidden_sizes: list[PositiveCount] = Field(default_factory=lambda: [128, 128], min_length=1, description="Softsign MLP widths of both nets (App. A: 128, 128).")
    policy_learning_rate: float = Field(1e-5, gt=0, description="Policy Adam step size (§5.1, App. A: 1e-5).")
    critic_learning_rate: float = Field(1e-4, gt=0, description="Critic Adam step size (App. A: 1e-4).")
    critic_weight_decay: float = Field(1e-4, ge=0, description="Critic L2 weight decay (App. A: 1e-4).")
    anneal_learning_rate: bool = Field(
        True, description="Anneal both learning rates by eq. 13 (ReF-ER); the paper found it worse for DDPG with ER (false there)."
    )
    adam_eps: float = Field(1e-8, gt=0, description="Adam epsilon (not stated; optax default).")
    discount: float = Field(0.995, ge=0, lt=1, description="gamma (App. A: 0.995).")
    batch_size: PositiveCount = Field(128, description="B (App. A: 128, half of V-RACER's to equalise compute).")
    target_rate: float = Field(0.01, gt=0, le=1, description="Soft target update alpha (App. A: 0.01).")
    sigma: float = Field(0.2, gt=0, description="sigma of pi_w = m_w + N(0, sigma^2 I), which defines rho and the KL whatever noise explored (the stored mu is pi at the acting parameters, §2), and of the exploration noise (App. A: 0.2).")
    exploration: Literal["gaussian", "ornstein_uhlenbeck"] = Field(
        "gaussian", description="Gaussian N(0, sigma^2 I) (ReF-ER variants) or an OU process (ER and PER, App. A)."
    )
    ou_theta: float = Field(0.15, gt=0, le=1, description="OU mean reversion theta (App. A: 0.15; its sigma is 'sigma').")
    per: PrioritisedReplaySpec | None = Field(
        None, description="Rank-based prioritised replay, with rules.variant per only; null: uniform sampling."
    )

    @model_validator(mode="after")
    def _per_block(self) -> "DDPGAgentSpec":
        _priority_matches_variant(self)
        return self


class NAFAgentSpec(AgentSpecModel):
    """NAF with ReF-ER (§2, eq. 4, App. A): one MLP -> V(s), m(s), lower-triangular L(s); Q = V - (a-m)^T L L^T (a-m).

    Far samples give no TD gradient (rule 1); rule 2 adds the KL ||m - m_mu||^2 / (2 sigma^2) and mixes beta into the
    whole TD gradient (eq. 10, ``rule2_gradient: whole``) or into that of the mean outputs only (smarties@2019
    NAF.cpp, ``mean_only``: V and L get the unscaled TD gradient).
    """

    kind: Literal["naf"] = Field(description="Agent kind.")
    null_additions: ClassVar[frozenset[str]] = frozenset({"per"})  # rank-based prioritised replay
    rules: ReferRulesSpec = Field(description="ReF-ER rules and variant (er: plain replay).")
    replay: EpisodeReplaySpec = Field(default_factory=EpisodeReplaySpec, description="Replay memory.")
    hidden_sizes: list[PositiveCount] = Field(default_factory=lambda: [128, 128], min_length=1, description="Softsign MLP widths (App. A: 128, 128).")
    learning_rate: float = Field(1e-4, gt=0, description="Adam step size (App. A: 1e-4), annealed by eq. 13 if anneal_learning_rate.")
    anneal_learning_rate: bool = Field(True, description="Anneal the learning rate by eq. 13.")
    adam_eps: float = Field(1e-8, gt=0, description="Adam epsilon (not stated; optax default).")
    discount: float = Field(0.995, ge=0, lt=1, description="gamma (App. A: 0.995).")
    batch_size: PositiveCount = Field(256, description="B (App. A: 256).")
    target_rate: float = Field(0.01, gt=0, le=1, description="Soft target update alpha (App. A: 0.01).")
    sigma: float = Field(0.2, gt=0, description="Gaussian exploration N(0, sigma^2 I); also defines pi_w for rho and the KL (App. A: 0.2).")
    rule2_gradient: Literal["whole", "mean_only"] = Field(
        "whole",
        description="What rule 2's beta scales (rules refer and refer2): 'whole' the whole TD gradient, as eq. 10 "
        "writes g = beta g_hat - (1 - beta) g_D (the paper); 'mean_only' only the TD gradient reaching the mean "
        "outputs m, V and L getting it unscaled (smarties@2019 NAF.cpp, and this project's runs before session 24). "
        "No effect on er, per and refer1.",
    )
    per: PrioritisedReplaySpec | None = Field(
        None, description="Rank-based prioritised replay, with rules.variant per only; null: uniform sampling."
    )

    @model_validator(mode="after")
    def _per_block(self) -> "NAFAgentSpec":
        _priority_matches_variant(self)
        return self
