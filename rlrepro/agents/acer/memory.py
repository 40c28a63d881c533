"""ACER's sequence sampling from the ReF-ER episode memory (``EpisodeReplay``: whole episodes, FIFO, N steps).

ReF-ER App. A: each gradient from 24 uniformly sampled episodes. Here each sampled episode gives one window of
min(L, length) consecutive steps, its start uniform over the starts that keep the window inside the episode
(smarties' ACER takes 200-step windows too; this is the recorded deviation of ``ACERAgentSpec``). Targets are
computed within the window: its last step bootstraps from V(s_{t+1}) -- the next stored state inside the episode,
the final observation where a truncated episode ends, nothing (discount 0) where it terminated.
"""

from __future__ import annotations

import numpy as np

from rlrepro.replay.episodes import EpisodeReplay


def sample_windows(replay: EpisodeReplay, episodes: int, window: int) -> dict[str, np.ndarray]:
    """[episodes, window] arrays (raw observations, scaled rewards) of ``Batch``'s fields, drawn with the memory's
    generator; padding (episodes shorter than the window) repeats the last real step with ``mask`` 0."""
    rng, size = replay.rng, replay.size
    stored = replay.episodes
    picks = rng.integers(0, len(stored), episodes)
    idx = np.empty((episodes, window), np.int64)
    next_obs = np.empty((episodes, window, replay.obs.shape[1]), np.float32)
    mask = np.zeros((episodes, window), np.float32)
    continue_ = np.zeros((episodes, window), np.float32)
    discount = np.full((episodes, window), replay.discount, np.float32)
    steps = np.arange(window)
    for b, e in enumerate(picks):
        start, length, final_obs, terminated = stored[e]
        offset = int(rng.integers(0, max(length - window, 0) + 1))
        n = min(window, length - offset)
        idx[b] = (start + offset + np.minimum(steps, n - 1)) % size
        mask[b, :n] = 1.0
        continue_[b, : n - 1] = 1.0
        next_obs[b] = replay.obs[(idx[b] + 1) % size]
        if offset + n == length:  # the window ends where the episode does
            next_obs[b, n - 1:] = final_obs
            if terminated:
                discount[b, n - 1:] = 0.0
    return {
        "obs": replay.obs[idx], "next_obs": next_obs, "action": replay.action[idx], "mu_mean": replay.mu_mean[idx],
        "mu_std": replay.mu_std[idx], "reward": (replay.reward[idx] * replay.reward_scale * mask).astype(np.float32),
        "discount": discount, "continue_": continue_, "mask": mask,
    }
