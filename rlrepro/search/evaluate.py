"""The inner loop Eval(L, E) (Algorithm 1): train a DQN with a loss program and score its training returns.

Runs in executor workers: each process keeps its compiled ``HostDQN`` per (environment, slots, network
calls), so a new program reuses them. Fitness per environment (§3.1): the normalized training return,
returns clipped to [R_min, R_max], averaged over all episodes (``mean_all``, the paper) or the last 50
(``mean_last50``, the released code). The first environment is the hurdle (§3.3): below the threshold the
program's fitness is its hurdle score alone.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from rlrepro.agents.dqn.config import DQNConfig
from rlrepro.agents.dqn.trainer import HostDQN, normalize
from rlrepro.search.program import Program, bucket, encode

_COMPILED: dict[Any, HostDQN] = {}


@dataclasses.dataclass(frozen=True)
class EvalTask:
    """What a worker needs to score one program (picklable)."""

    environments: tuple[Any, ...]  # GymEnvSpec, the hurdle first
    steps: tuple[int, ...]
    inner: tuple[DQNConfig, ...]  # one per environment (the epsilon decay may differ per environment)
    hurdle_threshold: float
    fitness: str  # mean_all | mean_last50
    seed: int


@dataclasses.dataclass(frozen=True)
class EvalResult:
    fitness: float
    scores: tuple[float, ...]
    passed_hurdle: bool
    seconds: float


def _host_dqn(env: Any, program: Program, inner: DQNConfig) -> tuple[HostDQN, Any]:
    """The worker's compiled DQN for this environment, slot count and network-call pattern (built once)."""
    from rlrepro.search.interpreter import make_program_loss

    arrays, calls = encode(program)
    env_key = env.model_dump_json()
    key = (env_key, arrays.op.shape[0], calls, inner)
    if key not in _COMPILED:
        if env_key not in _SHAPES:
            _SHAPES[env_key] = _shape(env)
        obs_dim, num_actions = _SHAPES[env_key]
        constants = program.constants
        _COMPILED[key] = HostDQN(
            inner, env, loss_factory=lambda apply: make_program_loss(apply, obs_dim, num_actions, constants, calls)
        )
    return _COMPILED[key], arrays


_SHAPES: dict[str, tuple[int, int]] = {}


def _shape(env: Any) -> tuple[int, int]:
    from rlrepro.environments.gym_envs import HostEnv

    probe = HostEnv(env, 0)
    return int(probe.reset().shape[0]), probe.num_actions


def score(returns: list[float], bounds: Any, fitness: str) -> float:
    """Normalized training return of one run (0 if no episode ended)."""
    if not returns:
        return 0.0
    chosen = returns[-50:] if fitness == "mean_last50" else returns
    return float(np.mean(normalize(chosen, bounds)))


def evaluate_program(program: Program, task: EvalTask) -> EvalResult:
    """Train on each environment in turn (hurdle first) and sum the normalized scores."""
    started = time.monotonic()
    scores = []
    for i, (env, steps, inner) in enumerate(zip(task.environments, task.steps, task.inner)):
        dqn, arrays = _host_dqn(env, program, inner)
        state = dqn.init([task.seed], steps)
        state, _ = dqn.run(state, steps, program=arrays)
        value = score(state.host.episode_returns[0], env.return_range, task.fitness)
        scores.append(value if np.isfinite(value) else 0.0)
        if i == 0 and scores[0] < task.hurdle_threshold:
            return EvalResult(scores[0], tuple(scores), False, time.monotonic() - started)
    return EvalResult(float(sum(scores)), tuple(scores), True, time.monotonic() - started)


__all__ = ["EvalResult", "EvalTask", "bucket", "evaluate_program", "score"]
