"""IMPALA + synthetic returns agent spec (Raposo et al. 2021, "Synthetic Returns for Long-Term Credit Assignment")."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Union

from pydantic import Field, model_validator

from rlrepro.specs.agents.common import AgentSpecModel, RMSPropSpec
from rlrepro.specs.agents.impala import ActorSpec, ImpalaLossSpec
from rlrepro.specs.common import PositiveCount, SpecModel


class SRNetworkSpec(SpecModel):
    """The toy-task actor-critic of the paper (Supplement §6.6): an MLP torso, an optional LSTM core, then the
    policy network (a ReLU layer, two linear heads)."""

    kind: Literal["mlp"] = Field("mlp", description="Network kind (pure-JAX tasks; Atari is not wired yet).")
    hidden_sizes: list[PositiveCount] = Field(
        default_factory=lambda: [128], min_length=1, description="Widths of the ReLU torso layers (Chain: one FC128)."
    )
    lstm_size: PositiveCount | None = Field(
        256, description="LSTM core width after the torso (paper: 256); null: feed-forward."
    )
    head_hidden_sizes: list[PositiveCount] = Field(
        default_factory=lambda: [256],
        description="ReLU layers between the core and the two linear heads (policy logits, value), shared by both "
        "(Supplement §6.6: 'a 256-unit layer followed by a ReLU and two separate linear layers'); []: linear heads.",
    )


class SRConvNetworkSpec(SpecModel):
    """The Atari actor-critic of the paper (Supplement §6.6, "Architecture details"): a ConvNet of 3x3 kernels with
    stride 2 (channels 32, 64, 64), a fully connected layer (its width on Atari is not stated: ours 256, the Catch /
    Key-to-Door width), then the LSTM 256 and the policy network (FC 256 + ReLU, linear logits and value). The FC output is the representation the episodic memory stores."""

    kind: Literal["sr_conv"] = Field(description="Network kind: the paper's Atari ConvNet (Pong, Skiing).")
    channels: list[PositiveCount] = Field(
        default_factory=lambda: [32, 64, 64], min_length=1, description="Channels of the conv layers (paper: 32, 64, 64)."
    )
    kernel_size: PositiveCount = Field(3, description="Square kernel of every conv layer (paper: 3).")
    stride: PositiveCount = Field(2, description="Stride of every conv layer (paper: 2).")
    fc_size: PositiveCount = Field(
        256, description="Width of the FC + ReLU layer after the convs: the stored representation d (Atari: not stated; ours 256)."
    )
    lstm_size: PositiveCount | None = Field(256, description="LSTM core width after the torso (paper: 256); null: feed-forward.")
    head_hidden_sizes: list[PositiveCount] = Field(
        default_factory=lambda: [256],
        description="ReLU layers between the core and the two linear heads (policy logits, value), shared by both "
        "(Supplement §6.6: 'a 256-unit layer followed by a ReLU and two separate linear layers'); []: linear heads.",
    )


SRNetwork = Annotated[Union[SRNetworkSpec, SRConvNetworkSpec], Field(discriminator="kind")]


class SRAdamSpec(SpecModel):
    """Adam, the Skiing optimiser (Supplement "Atari Skiing Hyperparameter Sweep": lr, eps, beta1, beta2 searched)."""

    kind: Literal["adam"] = Field(description="Optimiser kind.")
    learning_rate: float = Field(gt=0, description="Step size (Skiing sweep: 1.25e-5 .. 4.5e-5, log-uniform).")
    b1: float = Field(ge=0, le=1, description="First-moment decay beta1 (Skiing sweep: 0.85 .. 1).")
    b2: float = Field(ge=0, lt=1, description="Second-moment decay beta2 (Skiing sweep: 0.8 .. 0.9).")
    eps: float = Field(gt=0, description="Epsilon, outside the square root as in Adam (Skiing sweep: 1.84e-4 .. 4e-4).")
    max_grad_norm: float | None = Field(None, gt=0, description="Clip the global gradient norm; null: no clipping (not stated).")
    lr_schedule: Literal["linear_to_zero", "constant"] = Field("constant", description="Learning-rate schedule (not stated).")


# No discriminator: RMSProp's ``kind`` has a default (the toy-task specs omit it), Adam's must be given.
SROptimizer = Union[RMSPropSpec, SRAdamSpec]


class SyntheticReturnsSpec(SpecModel):
    """The SR module and its use in the base agent (paper eqs. 1-3; notes §1.2-1.4, §5 items 2, 7-9)."""

    enabled: bool = Field(
        True,
        description="Train c, g, b with the SR loss. false = the baseline (notes ambiguity 2: alpha 0, beta 1, no SR "
        "loss, identical network); alpha must then be 0.",
    )
    alpha: float = Field(description="Weight of the synthetic return c(s_t) in the augmented reward (eq. 2; range 0.01-0.5).")
    beta: float = Field(1.0, ge=0, description="Weight of the environment reward in the augmented reward (eq. 2; 1, Skiing 0).")
    loss: Literal["one_stage", "two_stage"] = Field(
        "one_stage", description="one_stage: eq. 1 (every task but Skiing); two_stage: eq. 3 (Skiing)."
    )
    loss_weight: float = Field(1.0, gt=0, description="Weight of the SR loss summed over time and batch (code: 1; notes item 8).")
    memory_capacity: PositiveCount = Field(
        description="Memory slots per environment = the longest episode in steps (paper: Chain 10, Skiing 2000)."
    )
    current_repr: Literal["torso", "core"] = Field(
        "torso",
        description="Representation of the current state fed to g and b: the torso output (all tasks but Skiing) or "
        "the LSTM output (Skiing). Past states and c always use the torso output (notes §1.4, item 7).",
    )
    c_hidden: list[PositiveCount] = Field(default_factory=lambda: [256, 256], description="c MLP hidden widths (paper: 2x256).")
    b_hidden: list[PositiveCount] = Field(default_factory=lambda: [256, 256], description="b MLP hidden widths (paper: 2x256).")
    g_hidden: list[PositiveCount] = Field(
        default_factory=lambda: [256], description="g MLP hidden widths before the scalar and the sigmoid (paper: 256)."
    )

    @model_validator(mode="after")
    def _baseline_has_no_synthetic_reward(self) -> "SyntheticReturnsSpec":
        if not self.enabled and self.alpha != 0.0:
            raise ValueError(
                f"sr.enabled is false but sr.alpha is {self.alpha}: the baseline uses alpha 0 (an untrained c would "
                "inject noise rewards; notes ambiguity 2)"
            )
        return self


class ImpalaSRAgentSpec(AgentSpecModel):
    """IMPALA (V-trace actor-critic) with synthetic returns replacing the reward in both V-trace losses."""

    kind: Literal["impala_sr"] = Field(description="Agent kind.")
    null_additions: ClassVar[frozenset[str]] = frozenset({"actor"})  # Atari's host actors; null on pure-JAX tasks
    network: SRNetwork = Field(
        default_factory=SRNetworkSpec, description="Actor-critic network: mlp (toy tasks) or sr_conv (Atari)."
    )
    optimizer: SROptimizer = Field(
        description="Optimiser (paper: RMSProp, eps 1e-4, momentum 0, decay 0.99; Skiing: Adam)."
    )
    loss: ImpalaLossSpec = Field(description="IMPALA's loss and off-policy correction.")
    sr: SyntheticReturnsSpec = Field(description="The synthetic-returns module.")
    unroll_length: PositiveCount = Field(description="Unroll length T per batch entry (paper range 10-60).")
    batch_size: PositiveCount = Field(description="Trajectories per learner update and parallel environments (32-64).")
    policy_lag: int = Field(0, ge=0, description="Behaviour policy uses parameters this many updates old (0: on-policy).")
    actor: ActorSpec | None = Field(
        None,
        description="How acting is organised on Atari (the host actor-learner: threaded or sync); required on Atari, "
        "null on pure-JAX tasks (they act inside the jitted loop).",
    )
