"""Uniform replay for a batch of seeds stepped in lockstep: numpy arrays [num_seeds, capacity, ...]."""

from __future__ import annotations

from typing import Any

import numpy as np


class UniformReplay:
    """A ring buffer per seed; every seed adds one transition per step, so all share ``size`` and ``pos``.

    Sampling is uniform with one numpy generator per seed (the released code's Reverb table has priorities
    but never uses them, notes §2.3). Pickles only the filled part.
    """

    def __init__(self, num_seeds: int, capacity: int, obs_dim: int, seeds: list[int]):
        self.capacity = capacity
        self.obs_tm1 = np.zeros((num_seeds, capacity, obs_dim), np.float32)
        self.obs_t = np.zeros((num_seeds, capacity, obs_dim), np.float32)
        self.a_tm1 = np.zeros((num_seeds, capacity), np.int32)
        self.r_t = np.zeros((num_seeds, capacity), np.float32)
        self.discount_t = np.zeros((num_seeds, capacity), np.float32)
        self.rngs = [np.random.default_rng(s) for s in seeds]
        self.size = 0
        self.pos = 0

    def add(self, obs_tm1: np.ndarray, a_tm1: np.ndarray, r_t: np.ndarray, discount_t: np.ndarray, obs_t: np.ndarray) -> None:
        """One transition per seed (arrays with a leading [num_seeds] axis)."""
        i = self.pos
        self.obs_tm1[:, i], self.a_tm1[:, i], self.r_t[:, i] = obs_tm1, a_tm1, r_t
        self.discount_t[:, i], self.obs_t[:, i] = discount_t, obs_t
        self.pos = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int) -> tuple[np.ndarray, ...]:
        """(obs_tm1, a_tm1, r_t, discount_t, obs_t), each [num_seeds, batch_size, ...]."""
        idx = np.stack([rng.integers(0, self.size, batch_size) for rng in self.rngs])
        rows = np.arange(idx.shape[0])[:, None]
        return (self.obs_tm1[rows, idx], self.a_tm1[rows, idx], self.r_t[rows, idx],
                self.discount_t[rows, idx], self.obs_t[rows, idx])

    _ARRAYS = ("obs_tm1", "obs_t", "a_tm1", "r_t", "discount_t")

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self._ARRAYS:
            state[name] = getattr(self, name)[:, : self.size].copy()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in self._ARRAYS:
            stored = state[name]
            full = np.zeros((stored.shape[0], self.capacity, *stored.shape[2:]), stored.dtype)
            full[:, : self.size] = stored
            setattr(self, name, full)
