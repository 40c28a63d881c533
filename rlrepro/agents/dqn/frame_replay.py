"""Uniform replay for Atari that stores each observation's newest uint8 frame once.

An Atari observation is a stack of the last ``S`` frames ([S, H, W] uint8, oldest first, as ale-py's
vector environment gives it); consecutive observations of a game share S - 1 frames, and the first
observation of a game has zeros in its S - 1 older slots. So the buffer keeps one [H, W] frame per step
(7 KB at 84x84 instead of 2 x 28 KB for an (s, s') pair of float stacks: 1e6 steps in 7 GB) and rebuilds
both stacks of a sampled transition from the frames before it, zeroing every slot older than the start
of its game.

Step ``j`` holds the observation the action was taken in, the action, the reward and the discount
(gamma, or 0 at any end); its next observation is step ``j + 1``'s, so the newest step is sampled only
once the following one is added. Where an end was a game over the next observation is the next game's
first (ale-py resets in the same step); its discount is 0, so it is never bootstrapped from.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class FrameReplay:
    """A ring buffer of ``capacity`` steps of one environment, sampled uniformly with its own generator."""

    def __init__(self, capacity: int, frame_shape: tuple[int, ...], stack: int, seed: int):
        if capacity < stack + 1:
            raise ValueError(f"capacity {capacity} must exceed the frame stack {stack}")
        self.capacity, self.stack = capacity, stack
        self.frames = np.zeros((capacity, *frame_shape), np.uint8)
        self.first = np.zeros(capacity, bool)  # the step's observation starts a game
        self.actions = np.zeros(capacity, np.int32)
        self.rewards = np.zeros(capacity, np.float32)
        self.discounts = np.zeros(capacity, np.float32)
        self.rng = np.random.default_rng(seed)
        self.total = 0  # steps added so far (logical index of the next one)

    def add(self, observation: np.ndarray, first: bool, action: int, reward: float, discount: float) -> None:
        """One step: ``observation`` [S, H, W] uint8, whether it is a game's first, and its transition."""
        i = self.total % self.capacity
        self.frames[i] = observation[-1]
        self.first[i], self.actions[i], self.rewards[i], self.discounts[i] = first, action, reward, discount
        self.total += 1

    @property
    def num_transitions(self) -> int:
        """Transitions that can be sampled (their next observation is stored, their older frames not overwritten)."""
        low, high = self._range()
        return max(0, high - low)

    def _range(self) -> tuple[int, int]:
        low = 0 if self.total <= self.capacity else self.total - self.capacity + self.stack - 1
        return low, self.total - 1

    def sample(self, batch_size: int) -> tuple[np.ndarray, ...]:
        """(obs_tm1, a_tm1, r_t, discount_t, obs_t) of ``batch_size`` uniformly drawn transitions."""
        low, high = self._range()
        if high <= low:
            raise ValueError("no complete transition stored yet")
        j = self.rng.integers(low, high, batch_size)
        i = j % self.capacity
        return self.observations(j), self.actions[i], self.rewards[i], self.discounts[i], self.observations(j + 1)

    def observations(self, j: np.ndarray) -> np.ndarray:
        """The stacked observations [B, S, H, W] of logical steps ``j``, zeros before each one's game start."""
        idx = j[:, None] - np.arange(self.stack - 1, -1, -1)[None, :]  # [B, S], oldest first
        first = self.first[idx % self.capacity]
        # Slot k is kept when no game starts at a later slot (k + 1 .. S - 1) of the same stack.
        later_starts = np.cumsum(first[:, ::-1], axis=1)[:, ::-1] - first
        keep = later_starts == 0
        return self.frames[idx % self.capacity] * keep[:, :, None, None].astype(np.uint8)

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("FrameReplay is not checkpointed (it is refilled after a resume)")
