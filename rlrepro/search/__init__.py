"""Evolving RL Algorithms (Co-Reyes et al. 2021): loss programs, one compiled interpreter, regularized evolution."""
