"""Network parts shared by the agents (flax.linen), each written once: the torsos (``torsos``: IMPALA's MLP,
shallow and deep conv nets, which DQN, FRODO and IMPALA+SR use too), the LSTM core that resets at episode ends
(``lstm``), ReF-ER's Softsign MLP (``softsign``: V-RACER, DDPG, NAF, ACER) and the conv networks' configuration
(``config``, no JAX). An agent's own heads stay in its ``agents/<kind>/networks.py``.

Moving a module here keeps its class name, and so its parameter names and initial values (flax derives both from
the names): a checkpoint and a fixed-seed run are the same as before.
"""
