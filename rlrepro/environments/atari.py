"""Atari 2600 through ale-py's native vector environment, with the protocol of the spec.

Every protocol setting comes from :class:`rlrepro.specs.environments.AtariEnvSpec`: action repeat,
max-pooling of the last repeated frames, resolution, grey-scale, frame stack, no-op starts, sticky
actions, life loss as terminal (training only), the episode frame cap and the action set.

Episode ends, as the learner sees them (:class:`AtariStep`):
- The vector environment auto-resets in the SAME step: at a game over, ``reward`` and the flags
  describe the last transition and ``observation`` is already the first of the next game. There is
  no dummy transition to mask (gymnasium's default next-step autoreset would insert one per
  episode, with a meaningless action and reward); the next game's observation is never used as a
  bootstrap because every end (terminal, time limit or lost life) has ``discount = 0``.
- Life loss as terminal (IMPALA Table G.1) is derived from the ``lives`` counter, not from
  ale-py's ``episodic_life`` option: that option restarts the whole game at every lost life (the
  agent would never see its later lives); here the game goes on and only the learning signal ends.
- ``game_over`` marks the end of a real game (all lives, or the frame cap): episode returns and
  evaluation scores are per game, in raw (unclipped) points.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from rlrepro.environments.availability import require_backend


class AtariStep(NamedTuple):
    """One step of N environments.

    Attributes:
      observation: uint8 [N, frame_stack, resolution, resolution] (channels first, as ale-py gives it).
      reward: float32 [N], raw game points of the transition.
      done: bool [N], the learning signal's end: game over, time limit or (training) a lost life.
      game_over: bool [N], the game ended (terminated or hit the frame cap); ``observation`` is the next game's.
      truncated: bool [N], the game ended at the frame cap (a subset of ``game_over``).
      episode_return: float32 [N], the raw score of the game that ended at this step (0 elsewhere).
    """

    observation: np.ndarray
    reward: np.ndarray
    done: np.ndarray
    game_over: np.ndarray
    truncated: np.ndarray
    episode_return: np.ndarray


@dataclass
class AtariEnv:
    """N copies of one game stepped by ale-py's threaded vector environment.

    Args:
      spec: the protocol (an ``AtariEnvSpec``).
      num_envs: environments stepped together.
      seed: seeds the emulators (no-op starts, sticky actions).
      training: life loss ends the learning episode only in training; evaluation plays whole games.
      noop_max: overrides ``spec.noop_max`` (evaluation uses ``spec.evaluation.noop_max``).
      num_threads: emulator threads (0: one per core).
    """

    spec: Any
    num_envs: int
    seed: int
    training: bool = True
    noop_max: int | None = None
    num_threads: int = 0

    def __post_init__(self) -> None:
        require_backend(self.spec)
        if self.spec.max_pool_frames not in (1, 2):  # the spec rejects it; guard against unvalidated specs
            raise ValueError(f"max_pool_frames {self.spec.max_pool_frames}: ale-py max-pools 2 frames or none")
        from ale_py.vector_env import AtariVectorEnv

        self._env = AtariVectorEnv(
            self.spec.game,
            self.num_envs,
            num_threads=self.num_threads,
            max_num_frames_per_episode=self.spec.max_episode_frames,
            repeat_action_probability=self.spec.sticky_action_prob,
            full_action_space=self.spec.action_set == "full",
            autoreset_mode="SameStep",
            img_height=self.spec.resolution,
            img_width=self.spec.resolution,
            grayscale=self.spec.grayscale,
            stack_num=self.spec.frame_stack,
            frameskip=self.spec.action_repeat,
            maxpool=self.spec.max_pool_frames > 1,
            noop_max=self.spec.noop_max if self.noop_max is None else self.noop_max,
            episodic_life=False,
            reward_clipping=False,
            use_fire_reset=self.spec.fire_reset,
        )
        self.num_actions = int(self._env.single_action_space.n)
        self.observation_shape = tuple(self._env.single_observation_space.shape)
        self._lives = np.zeros(self.num_envs, np.int32)
        self._returns = np.zeros(self.num_envs, np.float64)

    def reset(self) -> np.ndarray:
        """Start every game; returns the first observations."""
        observation, info = self._env.reset(seed=self.seed)
        self._lives = np.asarray(info["lives"], np.int32).copy()
        self._returns[:] = 0.0
        return observation

    def step(self, actions: np.ndarray) -> AtariStep:
        """Play one agent step (``action_repeat`` frames) in every game."""
        observation, reward, terminated, truncated, info = self._env.step(np.asarray(actions, np.int32))
        reward = np.asarray(reward, np.float32)
        game_over = np.logical_or(terminated, truncated)
        lives = np.asarray(info["lives"], np.int32)
        life_lost = np.logical_and(lives < self._lives, ~game_over)
        self._lives = lives.copy()
        self._returns += reward
        episode_return = np.where(game_over, self._returns, 0.0).astype(np.float32)
        self._returns[game_over] = 0.0
        done = np.logical_or(game_over, life_lost) if self.spec.life_loss_terminal and self.training else game_over
        return AtariStep(observation, reward, done, game_over, np.asarray(truncated, bool), episode_return)

    def close(self) -> None:
        self._env.close()

    def __getstate__(self) -> dict:
        raise TypeError("AtariEnv holds emulator threads and cannot be pickled; checkpoints restart the games")
