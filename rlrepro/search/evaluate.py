"""The inner loop Eval(L, E) (Algorithm 1): train a DQN with a loss program and score its training returns.

Two ways to train on the hurdle (the first environment, CartPole): ``gym`` runs every environment through the
host loop (``HostDQN``: gymnasium stepped in Python, one jitted call per step) in executor workers, each
process keeping its compiled ``HostDQN`` per (environment, slots, network calls); ``jax`` trains K programs
side by side in one compiled loop on the pure-JAX CartPole (``agents/dqn/jax_loop.py``: no host round trip per step),
``hurdle_scores``, and only the programs that pass go on to the other environments through the host loop
(``evaluate_rest``). Fitness per environment (§3.1): the normalized training return, returns clipped to
[R_min, R_max], averaged over all episodes (``mean_all``, the paper) or the last 50 (``mean_last50``, the
released code). Below the hurdle threshold (§3.3) the program's fitness is its hurdle score alone.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from rlrepro.agents.dqn.config import DQNConfig
from rlrepro.agents.dqn.loop import HostDQN, normalize
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
    hurdle_backend: str = "gym"  # gym | jax
    hurdle_batch: int = 1  # programs trained side by side on the JAX hurdle


@dataclasses.dataclass(frozen=True)
class EvalResult:
    fitness: float
    scores: tuple[float, ...]
    passed_hurdle: bool
    seconds: float


def host_dqn(env: Any, program: Program, inner: DQNConfig) -> tuple[HostDQN, Any]:
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
        dqn, arrays = host_dqn(env, program, inner)
        state = dqn.init([task.seed], steps)
        state, _ = dqn.run(state, steps, program=arrays)
        value = score(state.host.episode_returns[0], env.return_range, task.fitness)
        scores.append(value if np.isfinite(value) else 0.0)
        if i == 0 and scores[0] < task.hurdle_threshold:
            return EvalResult(scores[0], tuple(scores), False, time.monotonic() - started)
    return EvalResult(float(sum(scores)), tuple(scores), True, time.monotonic() - started)


def evaluate_rest(program: Program, task: EvalTask, hurdle_score: float, hurdle_seconds: float = 0.0) -> EvalResult:
    """A program that passed the hurdle (scored ``hurdle_score`` elsewhere): train on the other environments."""
    started = time.monotonic()
    scores = [hurdle_score]
    for env, steps, inner in zip(task.environments[1:], task.steps[1:], task.inner[1:]):
        dqn, arrays = host_dqn(env, program, inner)
        state = dqn.init([task.seed], steps)
        state, _ = dqn.run(state, steps, program=arrays)
        value = score(state.host.episode_returns[0], env.return_range, task.fitness)
        scores.append(value if np.isfinite(value) else 0.0)
    return EvalResult(float(sum(scores)), tuple(scores), True, hurdle_seconds + time.monotonic() - started)


# --- the hurdle in one compiled loop, K programs side by side ----------------------------------------------------
_JAX_RUNS: dict[Any, Any] = {}
_CARTPOLE_LIMITS = {"CartPole-v0": 200, "CartPole-v1": 500}  # gymnasium's registered time limits
ALWAYS_CALLED = (0, 3)  # Q_theta(s_tm1), Q_target(s_t): computed for every batch, so fewer compiled variants


def jax_hurdle_env(env: Any) -> Any:
    """The pure-JAX CartPole for a gymnasium CartPole spec (it matches gymnasium step for step); else an error."""
    from rlrepro.environments.errors import UnsupportedSetupError
    from rlrepro.environments.jax_envs.cartpole import CartPole

    if env.name not in _CARTPOLE_LIMITS or env.kwargs or env.observation != "default":
        raise UnsupportedSetupError(
            f"hurdle_backend 'jax' needs the hurdle (first environment) to be a plain CartPole-v0 or -v1, got "
            f"'{env.name}' (kwargs {env.kwargs}, observation {env.observation}): use hurdle_backend 'gym'"
        )
    return CartPole(max_steps=env.max_episode_steps or _CARTPOLE_LIMITS[env.name])


def _persistent_compilation_cache() -> None:
    """Keep compiled hurdle loops on disk (JAX's persistent cache; ``JAX_COMPILATION_CACHE_DIR`` if set, else
    ~/.cache/rlrepro/jax): a loop compiles in 20-60 s per (slots, network calls) variant, and the next search,
    seed or process of the same settings then loads it instead."""
    import os
    from pathlib import Path

    import jax

    if not jax.config.jax_compilation_cache_dir:
        path = os.environ.get("JAX_COMPILATION_CACHE_DIR") or str(Path.home() / ".cache" / "rlrepro" / "jax")
        jax.config.update("jax_compilation_cache_dir", path)


def _jax_run(task: EvalTask, constants: tuple[float, ...], k: int, slots: int, calls: tuple[bool, ...]) -> Any:
    from rlrepro.agents.dqn.jax_loop import compiled_run
    from rlrepro.search.interpreter import make_program_loss

    env, steps, inner = task.environments[0], task.steps[0], task.inner[0]
    key = (env.model_dump_json(), steps, inner, constants, k, slots, calls)
    if key not in _JAX_RUNS:
        _persistent_compilation_cache()
        cartpole = jax_hurdle_env(env)
        obs_dim, num_actions = cartpole.observation_shape[0], cartpole.num_actions
        _JAX_RUNS[key] = compiled_run(
            inner, cartpole, obs_dim, num_actions, env.return_range, steps,
            lambda apply: make_program_loss(apply, obs_dim, num_actions, constants, calls),
        )
    return _JAX_RUNS[key]


def hurdle_scores(programs: list[Program], task: EvalTask) -> list[tuple[float, float]]:
    """(score, seconds) of each program on the hurdle, ``task.hurdle_batch`` programs at a time in lockstep.

    A batch shares the slot count (the largest bucket in it) and the network calls (their union, plus
    ``ALWAYS_CALLED``); a program's score does not depend on its batch (see ``agents/dqn/jax_loop.py``). The last batch is
    filled up with copies of its last program, whose scores are dropped, so every batch has the same shape.
    """
    import jax
    import jax.numpy as jnp

    from rlrepro.agents.dqn.jax_loop import seed_key

    out: list[tuple[float, float]] = []
    k = task.hurdle_batch
    for start in range(0, len(programs), k):
        chunk = programs[start : start + k]
        started = time.monotonic()
        encoded = [encode(p) for p in chunk]
        slots = max(a.op.shape[0] for a, _ in encoded)
        calls = tuple(any(c[i] for _, c in encoded) or i in ALWAYS_CALLED for i in range(4))
        arrays = [encode(p, slots)[0] for p in chunk]
        arrays += [arrays[-1]] * (k - len(arrays))
        batch = jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *arrays)
        run = _jax_run(task, chunk[0].constants, k, slots, calls)
        scores = jax.device_get(run(seed_key(task.seed), batch))
        values = scores.mean_last50 if task.fitness == "mean_last50" else scores.mean_all
        seconds = (time.monotonic() - started) / len(chunk)
        out += [(float(v) if np.isfinite(v) else 0.0, seconds) for v in values[: len(chunk)]]
    return out


__all__ = ["EvalResult", "EvalTask", "bucket", "evaluate_program", "evaluate_rest", "hurdle_scores", "score"]
