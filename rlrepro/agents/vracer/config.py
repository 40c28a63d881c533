"""Hyper-parameters of V-RACER (Novati & Koumoutsakos 2019, App. A; notes §2.2)."""

from __future__ import annotations

import dataclasses

from rlrepro.training.refer_host import ReplayAgentConfig


@dataclasses.dataclass(frozen=True)
class VRacerConfig(ReplayAgentConfig):
    """Everything the V-RACER learner, actor and host loop need (``from_spec``: the shared derivation)."""

    init_std: float = 0.447214
    learning_rate: float = 1e-4
    batch_size: int = 256
    truncation: float = 3.0
