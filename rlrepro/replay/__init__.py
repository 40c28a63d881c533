"""Replay memories that more than one agent uses: ReF-ER's whole-episode memory (``episodes``: V-RACER, DDPG, NAF,
ACER) and rank-based prioritised sampling over it (``priority``). A memory only one agent uses stays in its folder."""
