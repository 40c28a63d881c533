"""Agent specs: one model per agent kind, selected by ``kind`` (a discriminated union)."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field

from rlrepro.specs.common import PositiveCount, SpecModel


class RMSPropSpec(SpecModel):
    """RMSProp as IMPALA used it (TF1 semantics: eps inside the square root, accumulator starts at 1)."""

    kind: Literal["rmsprop"] = Field("rmsprop", description="Optimiser kind.")
    learning_rate: float = Field(gt=0, description="Initial learning rate (Table G.1: 0.0006 on Atari).")
    decay: float = Field(0.99, ge=0, lt=1, description="Second-moment decay (released code 0.99; not in the paper).")
    epsilon: float = Field(gt=0, description="Epsilon regulariser (Table G.1: 0.01 on Atari).")
    momentum: float = Field(0.0, ge=0, lt=1, description="Momentum (Tables D.3/G.1: 0).")
    eps_in_sqrt: bool = Field(True, description="TF1 semantics: eps inside the square root (PyTorch: outside).")
    initial_scale: float = Field(1.0, ge=0, description="Initial second-moment accumulator (TF1: 1.0, PyTorch: 0.0).")
    max_grad_norm: float | None = Field(
        None, gt=0, description="Clip the global gradient norm to this value (Table G.1: 40 on Atari); null: no clipping."
    )
    lr_schedule: Literal["linear_to_zero", "constant"] = Field(
        "linear_to_zero", description="Learning-rate schedule over the run's budget (Table G.1: anneal linearly to 0)."
    )


class MLPNetworkSpec(SpecModel):
    """A feed-forward actor-critic for vector or small-grid observations."""

    kind: Literal["mlp"] = Field("mlp", description="Network kind.")
    hidden_sizes: list[PositiveCount] = Field(
        default_factory=lambda: [64, 64], min_length=1, description="Widths of the ReLU hidden layers."
    )


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


class ImpalaAgentSpec(SpecModel):
    """IMPALA: V-trace actor-critic (Espeholt et al. 2018)."""

    kind: Literal["impala"] = Field(description="Agent kind.")
    network: NetworkSpec = Field(default_factory=MLPNetworkSpec, description="Actor-critic network.")
    optimizer: RMSPropSpec = Field(description="Optimiser.")
    loss: ImpalaLossSpec = Field(description="Loss and off-policy correction.")
    unroll_length: PositiveCount = Field(description="Unroll length n (trajectory length T) per batch entry.")
    batch_size: PositiveCount = Field(description="Trajectories per learner update (and parallel environments).")
    policy_lag: int = Field(
        0,
        ge=0,
        description="Behaviour policy uses parameters this many updates old (0: on-policy), so off-policy correction matters on one machine.",
    )


class ConvNetworkSpec(SpecModel):
    """IMPALA's image networks (Fig. 3): shallow (A3C-style convs) or deep (3 residual stages), optional LSTM."""

    kind: Literal["impala_shallow", "impala_deep"] = Field(description="Torso: shallow conv net or deep ResNet.")
    shallow_torso: Literal["a3c_2conv", "nature_3conv"] = Field(
        "a3c_2conv",
        description="Shallow torso: the A3C 2-conv net (default, notes ambiguity 1) or the Nature-DQN 3-conv net.",
    )
    channels: list[PositiveCount] = Field(
        default_factory=lambda: [16, 32, 32], description="Deep torso: channels of the residual stages."
    )
    fc_size: PositiveCount = Field(256, description="Width of the fully connected layer after the torso.")
    lstm_size: PositiveCount | None = Field(None, description="LSTM core width (256 on DMLab); null: feed-forward.")
    last_action_reward_inputs: bool = Field(
        False, description="Feed the clipped last reward and one-hot last action to the core (DMLab: yes)."
    )


NetworkSpec = Annotated[Union[MLPNetworkSpec, ConvNetworkSpec], Field(discriminator="kind")]


AgentSpec = Annotated[Union[ImpalaAgentSpec], Field(discriminator="kind")]
AGENT_KINDS: tuple[str, ...] = ("impala",)
