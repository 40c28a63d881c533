"""Hyper-parameters of IMPALA + synthetic returns (Raposo et al. 2021): IMPALA's config plus the SR module's."""

from __future__ import annotations

import dataclasses
from typing import Literal

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.specs.agents.common import defaults_from
from rlrepro.specs.agents.impala_sr import SyntheticReturnsSpec

SR_LOSSES: tuple[str, ...] = ("one_stage", "two_stage")
CURRENT_REPRS: tuple[str, ...] = ("torso", "core")


@dataclasses.dataclass(frozen=True)
@defaults_from(SyntheticReturnsSpec)
class SRConfig:
    """The synthetic-returns module (paper §2, eqs. 1-3; notes §1.2-1.4); mirrors ``SyntheticReturnsSpec``.

    Attributes:
      enabled: train c, g, b with the SR loss; False is the baseline (alpha must be 0; notes ambiguity 2).
      alpha: weight of c(s_t) in the augmented reward (eq. 2).
      beta: weight of the environment reward in the augmented reward (eq. 2; Skiing 0).
      loss: "one_stage" (eq. 1) or "two_stage" (eq. 3).
      loss_weight: weight of the SR loss summed over time and batch (released code: 1).
      memory_capacity: C, slots per environment (the longest episode, in steps).
      current_repr: "torso" or "core" (LSTM output; Skiing) for g(s_t) and b(s_t).
      c_hidden, b_hidden, g_hidden: MLP hidden widths (paper: 2x256, 2x256, 256).
    """

    enabled: bool
    alpha: float = 0.3
    beta: float
    loss: Literal["one_stage", "two_stage"]
    loss_weight: float
    memory_capacity: int = 10
    current_repr: Literal["torso", "core"]
    c_hidden: tuple[int, ...]
    b_hidden: tuple[int, ...]
    g_hidden: tuple[int, ...]

    def __post_init__(self) -> None:
        problems = []
        if self.loss not in SR_LOSSES:
            problems.append(f"loss must be one of {SR_LOSSES}, got {self.loss!r}")
        if self.current_repr not in CURRENT_REPRS:
            problems.append(f"current_repr must be one of {CURRENT_REPRS}, got {self.current_repr!r}")
        if not self.enabled and self.alpha != 0.0:
            problems.append(f"the baseline (enabled=False) needs alpha 0, got {self.alpha}")
        if self.memory_capacity < 1 or self.loss_weight <= 0:
            problems.append(f"memory_capacity >= 1 and loss_weight > 0 needed, got {self.memory_capacity}, {self.loss_weight}")
        if problems:
            raise ValueError("invalid SRConfig: " + "; ".join(problems))

    @property
    def two_stage(self) -> bool:
        return self.loss == "two_stage"


@dataclasses.dataclass(frozen=True)
class SRConvConfig:
    """The paper's Atari ConvNet (Supplement §6.6): conv layers of ``channels`` with square ``kernel_size`` and
    ``stride``, ReLU, then FC ``fc_size`` + ReLU (the representation the memory stores); mirrors ``SRConvNetworkSpec``."""

    channels: tuple[int, ...] = (32, 64, 64)
    kernel_size: int = 3
    stride: int = 2
    fc_size: int = 256


@dataclasses.dataclass(frozen=True)
class AdamConfig:
    """Adam (Skiing; Supplement "Atari Skiing Hyperparameter Sweep"); the learning rate and its schedule are
    IMPALA's fields (``ImpalaConfig.learning_rate``, ``lr_schedule``), as is ``max_grad_norm``."""

    b1: float = 0.9
    b2: float = 0.85
    eps: float = 3e-4


@dataclasses.dataclass(frozen=True)
class ImpalaSRConfig:
    """Everything the IMPALA+SR learner, actor and loop need (frozen: a jit static argument).

    Attributes:
      impala: IMPALA's hyper-parameters (discount, unroll, batch, RMSProp, V-trace, entropy, baseline,
        reward clip, policy lag; ``hidden_sizes`` is the torso MLP).
      sr: the synthetic-returns module.
      lstm_size: LSTM core width after the torso (paper: 256); None: feed-forward.
      head_hidden: ReLU layers between the core and the linear policy and value heads (paper: one of 256).
      rmsprop_eps_in_sqrt: TF1 RMSProp semantics (eps inside the square root).
      rmsprop_initial_scale: initial second-moment accumulator (TF1: 1).
      conv: the Atari ConvNet torso (None: the MLP torso of ``impala.hidden_sizes``).
      adam: Adam's constants (None: RMSProp with ``impala``'s constants).
    """

    impala: ImpalaConfig
    sr: SRConfig
    lstm_size: int | None = 256
    head_hidden: tuple[int, ...] = (256,)
    rmsprop_eps_in_sqrt: bool = True
    rmsprop_initial_scale: float = 1.0
    conv: SRConvConfig | None = None
    adam: AdamConfig | None = None

    def __post_init__(self) -> None:
        if self.impala.conv_network is not None:
            raise ValueError("invalid ImpalaSRConfig: IMPALA's conv_network is not used by impala_sr (set conv)")
        if self.lstm_size is not None and self.lstm_size < 1:
            raise ValueError(f"invalid ImpalaSRConfig: lstm_size must be >= 1 or None, got {self.lstm_size}")

    @property
    def frames_per_update(self) -> int:
        return self.impala.frames_per_update
