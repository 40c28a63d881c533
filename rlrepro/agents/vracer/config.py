"""Hyper-parameters of V-RACER (Novati & Koumoutsakos 2019, App. A; notes §2.2)."""

from __future__ import annotations

import dataclasses

from rlrepro.specs.agents.common import defaults_from
from rlrepro.specs.agents.refer import VRacerAgentSpec
from rlrepro.training.refer_config import ReplayAgentConfig


@dataclasses.dataclass(frozen=True)
@defaults_from(VRacerAgentSpec)
class VRacerConfig(ReplayAgentConfig):
    """Everything the V-RACER learner, actor and host loop need (``from_spec``: the shared derivation)."""

    init_std: float
    learning_rate: float
    batch_size: int
    truncation: float
    learning: bool  # false: the control arm (training.optim.learning_or_frozen)
