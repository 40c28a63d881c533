"""gymnasium MuJoCo tasks (v5, ``mujoco`` bindings) for the ReF-ER agents: continuous actions on the host.

``MujocoHostEnv`` is a :class:`HostEnv` whose actions are float vectors: it shares the seeding and the
replay-on-unpickle checkpointing (MuJoCo is deterministic, so replaying the episode's actions rebuilds the
state). ``random_score`` measures the mean return of a uniform-random policy and caches it with provenance
(the reference point R_random of normalised scores, notes §7.2).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from rlrepro.environments.gym_envs import HostEnv

RANDOM_SCORE_EPISODES = 100


class MujocoHostEnv(HostEnv):
    """One MuJoCo task: flat float32 observations, actions in the task's box (clipped), seeded episodes."""

    @property
    def action_low(self) -> np.ndarray:
        return np.asarray(self._env.action_space.low, np.float32)

    @property
    def action_high(self) -> np.ndarray:
        return np.asarray(self._env.action_space.high, np.float32)

    @property
    def action_dim(self) -> int:
        return int(np.prod(self._env.action_space.shape))

    def _observe(self, obs: Any) -> np.ndarray:
        return np.asarray(obs, np.float32).ravel()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool]:  # type: ignore[override]
        """(observation, reward, terminated, truncated) after one action (clipped to the box)."""
        space = self._env.action_space
        action = np.clip(np.asarray(action, np.float32), space.low, space.high)
        self.actions.append(action)
        obs, reward, terminated, truncated, _ = self._env.step(action)
        return self._observe(obs), float(reward), bool(terminated), bool(truncated)


class TaskShape(NamedTuple):
    """What a host agent needs of a task before it trains: sizes, the episode cap and App. B's action scale."""

    obs_dim: int
    action_dim: int
    max_episode_steps: int
    action_scale: np.ndarray  # ReF-ER App. B, every agent: a' = a (upper - lower) / 2 (the env then clips to its box)


def task_shape(env_spec: Any) -> TaskShape:
    """One probe environment's sizes; the episode cap is the spec's, else the registered task's."""
    probe = MujocoHostEnv(env_spec, 0)
    return TaskShape(
        obs_dim=int(probe.reset().shape[0]),
        action_dim=probe.action_dim,
        max_episode_steps=int(env_spec.max_episode_steps or probe._env.spec.max_episode_steps),
        action_scale=(probe.action_high - probe.action_low) / 2.0,
    )


def episode_returns(spec: Any, episodes: int, seed: int, policy: str = "uniform_random") -> tuple[list[float], float]:
    """Undiscounted returns of ``episodes`` episodes, and their mean length in steps.

    ``policy``: ``uniform_random`` (uniform in the task's action box) or ``zero_action`` (the zero vector, clipped
    to the box as every action is). The one measuring loop of R_random here and of ``environments.trivial``.
    """
    if policy not in ("uniform_random", "zero_action"):
        raise ValueError(f"unknown MuJoCo trivial policy {policy!r}; expected uniform_random or zero_action")
    env = MujocoHostEnv(spec, seed)
    rng = np.random.default_rng(seed + 1)
    returns, lengths = [], []
    for _ in range(episodes):
        env.reset()
        total, steps, done = 0.0, 0, False
        while not done:
            if policy == "uniform_random":
                action = rng.uniform(env.action_low, env.action_high)
            else:
                action = np.zeros(env.action_dim, np.float32)
            _, reward, terminated, truncated = env.step(action)
            total, steps = total + reward, steps + 1
            done = terminated or truncated
        returns.append(total)
        lengths.append(steps)
    return returns, float(np.mean(lengths))


def random_episode_returns(spec: Any, episodes: int, seed: int) -> list[float]:
    """Undiscounted returns of ``episodes`` episodes of uniform-random actions in the task's box."""
    return episode_returns(spec, episodes, seed, "uniform_random")[0]


def random_score(spec: Any, cache_dir: Path, *, episodes: int = RANDOM_SCORE_EPISODES, seed: int = 0) -> dict[str, Any]:
    """R_random of ``spec`` (mean over ``episodes`` uniform-random episodes), read from or written to the cache.

    The cache file names the task and its version; it records how it was measured (episodes, seed, package
    versions, date). A spec that states ``random_score`` uses that value instead (provenance: the spec).
    """
    if spec.random_score is not None:
        return {"env": spec.name, "random_score": float(spec.random_score), "source": "spec"}
    path = Path(cache_dir) / f"{spec.name}_{_kwargs_key(spec)}_e{episodes}_s{seed}.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    returns = random_episode_returns(spec, episodes, seed)
    record = {
        "env": spec.name,
        "kwargs": dict(spec.kwargs),
        "max_episode_steps": spec.max_episode_steps,
        "random_score": float(np.mean(returns)),
        "std": float(np.std(returns)),
        "episodes": episodes,
        "seed": seed,
        "policy": "uniform in the action box",
        "source": "measured",
        "versions": {p: metadata.version(p) for p in ("gymnasium", "mujoco")},
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return record


def _kwargs_key(spec: Any) -> str:
    items = sorted(spec.kwargs.items()) + [("max_steps", spec.max_episode_steps)]
    return "-".join(f"{k}={v}" for k, v in items)
