"""Hyper-parameters of the DQN agent used by Evolving RL Algorithms (Co-Reyes et al. 2021, App. B; notes §2.3)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from rlrepro.networks.config import ConvNetworkConfig
from rlrepro.specs.agents.common import defaults_from
from rlrepro.specs.agents.dqn import DQNAgentSpec

LossName = Literal["dqn", "ddqn", "dqnreg", "dqnclipped", "program"]
LOSSES: tuple[str, ...] = ("dqn", "ddqn", "dqnreg", "dqnclipped", "program")


#: Where ``DQNConfig``'s fields live in ``DQNAgentSpec`` when not at its top level under the same name: their defaults
#: come from there (``defaults_from``) and ``dqn_config`` reads them there (``spec_values``).
SPEC_PATHS = {
    "loss": "loss.name",
    "td_scale": "loss.td_scale",
    "k": "loss.k",
    "clip_gamma": "loss.clip_gamma",
    "learning_rate": "optimizer.learning_rate",
    "adam_eps": "optimizer.eps",
    "epsilon_start": "exploration.start",
    "epsilon_end": "exploration.end",
    "epsilon_decay_steps": "exploration.decay_steps",
}


@dataclasses.dataclass(frozen=True)
@defaults_from(DQNAgentSpec, SPEC_PATHS)
class DQNConfig:
    """Everything the DQN learner, actor and host loop need; frozen (a safe jit static argument).

    Attributes:
      loss: dqn | ddqn | dqnreg | dqnclipped, or ``program`` (a loss graph run by the search interpreter).
      td_scale: scale of the (Q - Y)^2 term (1: paper's printed form; 0.5: the released graphs' L2Distance); default
        the spec model's ``DEFAULT_TD_SCALE``.
      k: DQNReg weight of Q(s, a). 0.1 (§4.3).
      clip_gamma: DQNClipped's gamma in max(Q - Y, gamma M^2): ``per_transition`` (gamma_t, 0 at terminals) or
        ``constant``.
      discount: gamma. 0.99 (released code; not in the paper).
      learning_rate: Adam step size. 1e-4 (App. B).
      adam_eps: Adam epsilon (Sonnet default 1e-8).
      hidden_sizes: MLP widths (App. B: 256, 256, ReLU).
      batch_size: transitions per update (code: 32).
      replay_capacity: maximum stored transitions (code: 1e6).
      min_replay: transitions stored before the first update (code: 1000).
      update_period: environment steps per gradient update (code: 1).
      target_period: updates between copies of the online parameters to the target (App. B: 100).
      epsilon_start, epsilon_end, epsilon_decay_steps: linear epsilon-greedy schedule over environment steps
        (App. B: 1 -> 0.05 over 1000 steps on classic control, 1e5 on MiniGrid; Atari 1 -> 0.1 over 1e6).
      conv_network: the image Q-network's torso (Atari: the shallow A3C 2-conv net + FC 256); None: the MLP.
      reward_clip: rewards are clipped to [-c, c] in the learner; None leaves them raw (released code: its
        learner overrides Acme's clipping step and its Atari wrapper does not clip).
      evaluation_period: Atari: agent steps between evaluations (App. B: 1e6); None: only after the last chunk.
    """

    loss: LossName = "dqn"
    td_scale: float
    k: float
    clip_gamma: Literal["per_transition", "constant"]
    discount: float
    learning_rate: float
    adam_eps: float
    hidden_sizes: tuple[int, ...] = (256, 256)
    batch_size: int
    replay_capacity: int
    min_replay: int
    update_period: int
    target_period: int
    epsilon_start: float
    epsilon_end: float
    epsilon_decay_steps: int
    conv_network: ConvNetworkConfig | None = None
    reward_clip: float | None
    evaluation_period: int | None
    learning: bool  # false: the control arm (training.optim.learning_or_frozen)

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if self.reward_clip is not None and self.reward_clip <= 0:
            raise ValueError(f"reward_clip must be > 0 or None, got {self.reward_clip}")
