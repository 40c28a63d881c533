"""Host (gymnasium) environments for replay agents: classic control, Box2D and MiniGrid.

``HostEnv`` wraps one gymnasium environment with a flat float32 observation and deterministic
seeding (each episode's reset seed comes from a generator seeded by the run seed). It pickles as its
spec, its generator, the current episode's reset seed and the actions taken since: unpickling
rebuilds the environment and replays those actions, so checkpoints hold any environment (Box2D
worlds cannot be pickled) and a resumed run continues exactly where it stopped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlrepro.environments.availability import require_backend

# MiniGrid's full-grid encoding (App. C; released wrapper 'v3'): (object, colour, state) per cell, the agent
# cell set to (agent, red, direction), each channel divided by its largest value.
_MINIGRID_AGENT, _MINIGRID_RED = 10, 0
_MINIGRID_SCALE = np.array([10.0, 5.0, 3.0], np.float32)


def make_gym(spec: Any) -> Any:
    """``gymnasium.make`` of a ``GymEnvSpec`` with its time limit (MiniGrid: ``max_steps``, the paper's 100)."""
    require_backend(spec)
    import gymnasium as gym

    kwargs = dict(spec.kwargs)
    if spec.name.startswith("MiniGrid"):
        import minigrid  # noqa: F401  (registers the MiniGrid ids)

        if spec.max_episode_steps is not None:
            kwargs.setdefault("max_steps", spec.max_episode_steps)
        return gym.make(spec.name, **kwargs)
    if spec.max_episode_steps is not None:
        kwargs["max_episode_steps"] = spec.max_episode_steps
    return gym.make(spec.name, **kwargs)


def encode_minigrid(env: Any) -> np.ndarray:
    """The fully observed grid as a flat float32 vector of W * H * 3 values in [0, 1]."""
    base = env.unwrapped
    grid = base.grid.encode().astype(np.float32)
    x, y = base.agent_pos
    grid[x, y] = (_MINIGRID_AGENT, _MINIGRID_RED, base.agent_dir)
    return (grid / _MINIGRID_SCALE).ravel()


def _num_actions(space: Any) -> int | None:
    """Discrete actions: their number; continuous (Box) actions: None (see ``environments.mujoco``)."""
    return int(space.n) if hasattr(space, "n") else None


class HostEnv:
    """One gymnasium environment with a flat float32 observation, seeded episodes and replayable pickling."""

    def __init__(self, spec: Any, seed: int):
        self.spec = spec
        self.rng = np.random.default_rng(seed)
        self._env = make_gym(spec)
        self.num_actions = _num_actions(self._env.action_space)
        self.episode_seed = 0
        self.actions: list[int] = []

    def _observe(self, obs: Any) -> np.ndarray:
        if self.spec.observation == "minigrid_fully_observed":
            return encode_minigrid(self._env)
        return np.asarray(obs, np.float32).ravel()

    def reset(self) -> np.ndarray:
        self.episode_seed = int(self.rng.integers(2**31 - 1))
        self.actions = []
        obs, _ = self._env.reset(seed=self.episode_seed)
        return self._observe(obs)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool]:
        """(observation, reward, terminated, truncated) after one action."""
        self.actions.append(int(action))
        obs, reward, terminated, truncated, _ = self._env.step(int(action))
        return self._observe(obs), float(reward), bool(terminated), bool(truncated)

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec, "rng": self.rng, "episode_seed": self.episode_seed, "actions": list(self.actions)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.spec, self.rng = state["spec"], state["rng"]
        self._env = make_gym(self.spec)
        self.num_actions = _num_actions(self._env.action_space)
        self.episode_seed, self.actions = state["episode_seed"], []
        self._env.reset(seed=self.episode_seed)
        for action in state["actions"]:
            self.step(action)
