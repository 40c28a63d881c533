"""DQN with the losses of Evolving RL Algorithms (Co-Reyes et al. 2021): DQN, DDQN, DQNReg, DQNClipped."""

from rlrepro.agents.dqn.config import LOSSES, DQNConfig
from rlrepro.agents.dqn.learner import Batch, Learner, LearnerState, make_learner
from rlrepro.agents.dqn.networks import QNetwork

__all__ = ["LOSSES", "Batch", "DQNConfig", "Learner", "LearnerState", "QNetwork", "make_learner"]
