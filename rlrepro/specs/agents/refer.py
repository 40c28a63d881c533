"""Agent specs of ReF-ER (Novati & Koumoutsakos, ICML 2019): V-RACER with the ReF-ER replay rules.

Values are the paper's (App. A; notes §2.2); where the paper is silent the field says what the released code
(smarties@2019) does and which one is the default.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlrepro.specs.common import PositiveCount, SpecModel


class ReferRulesSpec(SpecModel):
    """The replay rules (§3, eqs. 10-13) and which of them are on."""

    variant: Literal["er", "refer", "refer1", "refer2"] = Field(
        description="er: plain uniform replay; refer: rules 1 + 2; refer1: rule 1 only (skip far samples); "
        "refer2: rule 2 only (KL penalty, no skipping)."
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


class VRacerAgentSpec(SpecModel):
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
