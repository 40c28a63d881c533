"""rlrepro: declarative reproduction of five deep-RL papers (IMPALA, FRODO, Evolving RL, Synthetic Returns, ReF-ER)."""

__version__ = "0.1.0"
