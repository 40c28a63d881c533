"""DQN with the losses of Evolving RL Algorithms (Co-Reyes et al. 2021): DQN, DDQN, DQNReg, DQNClipped.

Trains on gymnasium environments (classic control, MiniGrid; seeds in lockstep, ``loop.py``) and on Atari
(the DQN conv net, uint8 frame replay, one seed per job, ``atari.py``); ``build.py`` is the registry's builder.
"""

from rlrepro.agents.exports import lazy_exports

# the names below, each imported from its module on first use (importing config.py alone loads no JAX)
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "config": ("LOSSES", "DQNConfig"),
        "learner": ("Batch", "Learner", "LearnerState", "make_learner"),
        "networks": ("ConvQNetwork", "QNetwork"),
    },
)
