"""The lockstep host loop: every seed of a job steps its own Python environment, one jitted call vmapped over seeds
per step (DQN on gymnasium, PPO, ACER and the ReF-ER agents V-RACER, DDPG and NAF on MuJoCo).

``LockstepHost.run`` is the loop, written once: per environment step the agent's ``_advance`` moves every seed
(its update, its next actions, its environments through ``SeedEnvs.step_env``), and after ``steps`` of them the
agent's ``_metrics`` reads the chunk from what the steps returned and from the episodes ``SeedEnvs`` tallied. An
agent gives ``init`` (its learners, keys, first actions and host state), ``_advance`` and ``_metrics``; its host
state subclasses ``SeedEnvs`` with what else it keeps (replay, rollout, statistics), all of it checkpointed.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from rlrepro.training.program import seed_keys


class LockstepState(NamedTuple):
    """A job's state: the learners (leaves [num_seeds, ...]), their keys, the actions chosen for the current
    observations (None where an agent chooses them within the step) and the host part (a ``SeedEnvs``)."""

    learner: Any
    keys: jax.Array
    pending: Any
    host: Any


class SeedEnvs:
    """The host side every lockstep agent keeps: one environment per seed, the current observations [seed, ...],
    each seed's running return and ended episodes' returns, and the environment steps taken."""

    def __init__(self, envs: list[Any], obs: np.ndarray):
        self.envs, self.obs = envs, obs
        self.running_return = np.zeros(len(envs), np.float64)
        self.episode_returns: list[list[float]] = [[] for _ in envs]
        self.steps = 0

    def step_env(self, i: int, action: Any) -> tuple[np.ndarray, float, bool, bool, np.ndarray]:
        """Seed ``i``'s environment takes ``action``: (observation, reward, terminated, truncated, the observation
        the seed goes on from). The return is tallied; an episode that ended is recorded and its environment reset,
        so the last item is then the reset's observation (the step's own observation otherwise)."""
        obs, reward, terminated, truncated = self.envs[i].step(action)
        self.running_return[i] += reward
        if not (terminated or truncated):
            return obs, reward, terminated, truncated, obs
        self.episode_returns[i].append(float(self.running_return[i]))
        self.running_return[i] = 0.0
        return obs, reward, terminated, truncated, self.envs[i].reset()

    def mark(self) -> list[int]:
        """Where each seed's list of episode returns stands (the start of a chunk)."""
        return [len(r) for r in self.episode_returns]

    def returns_since(self, mark: list[int]) -> list[list[float]]:
        """The returns of each seed's episodes that ended since ``mark``."""
        return [returns[start:] for returns, start in zip(self.episode_returns, mark)]


def episode_fields(host: SeedEnvs, mark: list[int], frames_per_step: int) -> dict[str, np.ndarray]:
    """The fields every lockstep agent's chunk metrics begin with, per seed: ``frames`` so far, ``episodes`` ended
    since ``mark`` and their ``mean_return`` (NaN if none)."""
    new = host.returns_since(mark)
    return {
        "frames": np.full(len(host.envs), host.steps * frames_per_step, np.int64),
        "episodes": np.array([len(r) for r in new]),
        "mean_return": np.array([np.mean(r) if r else np.nan for r in new]),
    }


def split_seed_keys(seeds: list[int]) -> tuple[jax.Array, jax.Array]:
    """Every seed's key split in two: (network keys, acting keys), each [num_seeds, 2]."""
    return jax.vmap(lambda k: jax.random.split(k))(seed_keys(seeds)).transpose(1, 0, 2)


def to_host(tree: Any) -> Any:
    """Every array the host reads from a jitted call, as numpy, as soon as the call is done (the serial loop waits for
    it anyway). ``np.asarray`` per leaf: on the CPU a fraction of ``jax.device_get``'s cost (about 60 vs 150 us for
    one step's nine outputs), which the loop pays every step."""
    return jax.tree.map(np.asarray, tree)


class LockstepHost:
    """A compiled lockstep agent for one environment: ``init`` a batch of seeds, ``run`` steps, read metrics.

    Subclasses give ``init`` (-> ``LockstepState``), ``_advance`` (one environment step of every seed -> the new state
    and what the step measured, None when it measured nothing) and ``_metrics`` (the chunk's metrics)."""

    def run(self, state: LockstepState, steps: int, **context: Any) -> tuple[LockstepState, Any]:
        """``steps`` environment steps (and their updates) for every seed; ``context`` goes to every ``_advance``."""
        mark = state.host.mark()
        outs = []
        for _ in range(steps):
            state, out = self._advance(state, **context)
            if out is not None:
                outs.append(out)
        return state, self._metrics(state, mark, outs)

    def _advance(self, state: LockstepState, **context: Any) -> tuple[LockstepState, Any]:
        raise NotImplementedError

    def _metrics(self, state: LockstepState, mark: list[int], outs: list[Any]) -> Any:
        raise NotImplementedError
