"""Agents: one folder per agent (``config``, ``networks``, ``learner``, ``actor``)."""
