"""Configurations of the shared networks: dataclasses only, no JAX (planning and ``rlrepro plan`` import them)."""

from __future__ import annotations

import dataclasses

CONV_KINDS: tuple[str, ...] = ("impala_shallow", "impala_deep")
SHALLOW_TORSOS: tuple[str, ...] = ("a3c_2conv", "nature_3conv")


@dataclasses.dataclass(frozen=True)
class ConvNetworkConfig:
    """IMPALA's image networks (Fig. 3, notes §2.1); mirrors ``rlrepro.specs.agents.ConvNetworkSpec``.

    Attributes:
      kind: "impala_shallow" (A3C-style convs) or "impala_deep" (3 residual stages).
      shallow_torso: "a3c_2conv" (16 8x8/4, 32 4x4/2; default, notes §5 ambiguity 1) or
        "nature_3conv" (32 8x8/4, 64 4x4/2, 64 3x3/1).
      channels: deep torso: channels of the residual stages (paper: 16, 32, 32).
      fc_size: width of the FC layer after the convolutions (paper: 256).
      lstm_size: LSTM core width; None: feed-forward (Atari experts, App. G).
      last_action_reward_inputs: feed the clipped last reward and one-hot last action to the core
        (released code, DMLab; notes §5 ambiguity 4: off for Atari).
    """

    kind: str = "impala_shallow"
    shallow_torso: str = "a3c_2conv"
    channels: tuple[int, ...] = (16, 32, 32)
    fc_size: int = 256
    lstm_size: int | None = None
    last_action_reward_inputs: bool = False

    def __post_init__(self) -> None:
        problems = []
        if self.kind not in CONV_KINDS:
            problems.append(f"kind must be one of {CONV_KINDS}, got {self.kind!r}")
        if self.shallow_torso not in SHALLOW_TORSOS:
            problems.append(f"shallow_torso must be one of {SHALLOW_TORSOS}, got {self.shallow_torso!r}")
        if not self.channels or any(c < 1 for c in self.channels):
            problems.append(f"channels must be non-empty positive widths, got {self.channels}")
        if self.fc_size < 1 or (self.lstm_size is not None and self.lstm_size < 1):
            problems.append(f"fc_size and lstm_size must be >= 1, got {self.fc_size}, {self.lstm_size}")
        if problems:
            raise ValueError("invalid ConvNetworkConfig: " + "; ".join(problems))

    @classmethod
    def from_spec(cls, spec: object) -> ConvNetworkConfig:
        """From a ``ConvNetworkSpec`` (or anything with its attribute names)."""
        return cls(
            kind=spec.kind,
            shallow_torso=spec.shallow_torso,
            channels=tuple(spec.channels),
            fc_size=spec.fc_size,
            lstm_size=spec.lstm_size,
            last_action_reward_inputs=spec.last_action_reward_inputs,
        )
