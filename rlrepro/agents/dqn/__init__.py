"""DQN with the losses of Evolving RL Algorithms (Co-Reyes et al. 2021): DQN, DDQN, DQNReg, DQNClipped.

Trains on gymnasium environments (classic control, MiniGrid; seeds in lockstep, ``trainer.py``) and on Atari
(the DQN conv net, uint8 frame replay, one seed per job, ``atari.py``); ``build.py`` is the registry's builder.
"""

from rlrepro.agents.dqn.config import LOSSES, DQNConfig
from rlrepro.agents.dqn.learner import Batch, Learner, LearnerState, make_learner
from rlrepro.agents.dqn.networks import ConvQNetwork, QNetwork

__all__ = ["LOSSES", "Batch", "ConvQNetwork", "DQNConfig", "Learner", "LearnerState", "QNetwork", "make_learner"]
