"""Measure trivial-policy scores with the environments' own code (the storage and loader: ``results.trivial``).

Each backend plays whole episodes the way the project's training and evaluation play them:

- JAX environments (``jax_envs``): ``make_jax_env`` with the spec's kwargs, vmapped over episodes, each env's
  first episode counted (same-step auto-reset: an episode ends at its terminated or truncated step);
- gymnasium classic control / MiniGrid: :class:`HostEnv` (the spec's time limit, seeded episodes);
- MuJoCo: :class:`MujocoHostEnv` through ``mujoco.episode_returns`` (one measuring loop for R_random and here);
- Atari: :class:`AtariEnv` exactly as ``ActorLearner.evaluate`` and the DQN evaluation build it (``training=False``,
  the spec's ``evaluation.noop_max``, whole games, the spec's frame cap, action set and sticky actions), each of
  ``episodes`` parallel emulators' first game counted.

Heavy imports (jax, gymnasium, ale-py) happen inside the functions that need them.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

from rlrepro.results.trivial import MIN_EPISODES, TrivialScore, env_name, protocol_json

DEFAULT_EPISODES: dict[str, dict[str, int]] = {
    # Atari: 27,000 agent steps per game at most. Every level rests on MIN_EPISODES (30) games (issue 46: from 2-3
    # games a random policy's interval spans much of a game's scores); NOOP too, so that its level is shown, not assumed.
    "atari": {"uniform_random": MIN_EPISODES, "noop": MIN_EPISODES},
    "jax": {"uniform_random": 1000, "noop": 1000},
    "gym": {"uniform_random": 100, "noop": 100},
    "mujoco": {"uniform_random": 100, "zero_action": 100},
}


def summarize(returns: list[float]) -> tuple[float, float, float, float, str]:
    """(mean, sd, low, high, method): the 95% Student-t interval of the mean (df = n - 1).

    One episode has no interval (NaN bounds); a sample with no spread has ``low == high == mean``.
    """
    values = np.asarray(returns, np.float64)
    n, mean = len(values), float(values.mean())
    if n < 2:
        return mean, math.nan, math.nan, math.nan, "none: one episode"
    sd = float(values.std(ddof=1))
    if sd == 0.0:
        return mean, 0.0, mean, mean, "no spread: every episode scored the same"
    from scipy import stats

    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return mean, sd, mean - half, mean + half, "student_t_95"


# --- per backend --------------------------------------------------------------------------------------------


_JAX_RUNNERS: dict[tuple[str, int], Any] = {}
_JAX_CHUNK = 256


def _jax_runner(env_spec: Any, episodes: int) -> tuple[Any, Any]:
    """(env, jitted chunk of ``_JAX_CHUNK`` vmapped steps), compiled once per protocol for both policies."""
    cache_key = (protocol_json(env_spec), episodes)
    if cache_key in _JAX_RUNNERS:
        return _JAX_RUNNERS[cache_key]
    import jax
    import jax.numpy as jnp

    from rlrepro.environments.jax_envs import make_jax_env

    env = make_jax_env(env_spec.name, **env_spec.kwargs)

    def one_step(carry: Any, key: jax.Array, noop: jax.Array) -> tuple[Any, None]:
        state, total, length, done = carry
        action_key, step_key = jax.random.split(key)
        random_action = jax.random.randint(action_key, (), 0, env.num_actions, dtype=jnp.int32)
        action = jnp.where(noop, jnp.zeros((), jnp.int32), random_action)
        state, ts = env.step(step_key, state, action)
        live = ~done
        total = total + jnp.where(live, ts.reward, 0.0)
        length = length + live.astype(jnp.int32)
        done = done | ts.terminated | ts.truncated
        return (state, total, length, done)

    @jax.jit
    def run_chunk(carry: Any, key: jax.Array, noop: jax.Array) -> Any:
        keys = jax.random.split(key, _JAX_CHUNK * episodes).reshape(_JAX_CHUNK, episodes, -1)
        step = jax.vmap(one_step, in_axes=(0, 0, None))
        return jax.lax.scan(lambda c, k: (step(c, k, noop), None), carry, keys)[0]

    _JAX_RUNNERS[cache_key] = (env, run_chunk)
    return env, run_chunk


def _jax_returns(env_spec: Any, policy: str, episodes: int, seed: int, max_steps: int = 100_000) -> tuple[list[float], float]:
    """First-episode returns of ``episodes`` vmapped copies of a pure-JAX environment, and their mean length."""
    import jax
    import jax.numpy as jnp

    env, run_chunk = _jax_runner(env_spec, episodes)
    noop = jnp.asarray(policy == "noop")
    key = jax.random.PRNGKey(seed)
    key, reset_key = jax.random.split(key)
    states, _ = jax.vmap(env.reset)(jax.random.split(reset_key, episodes))
    carry = (states, jnp.zeros(episodes, jnp.float32), jnp.zeros(episodes, jnp.int32), jnp.zeros(episodes, bool))
    for _ in range(max_steps // _JAX_CHUNK + 1):
        key, chunk_key = jax.random.split(key)
        carry = run_chunk(carry, chunk_key, noop)
        if bool(carry[3].all()):
            break
    else:
        raise RuntimeError(f"{env_spec.name}: an episode lasted over {max_steps} steps with policy {policy}")
    return np.asarray(carry[1], np.float64).tolist(), float(np.mean(np.asarray(carry[2])))


def _gym_returns(env_spec: Any, policy: str, episodes: int, seed: int) -> tuple[list[float], float]:
    from rlrepro.environments.gym_envs import HostEnv

    env, rng = HostEnv(env_spec, seed), np.random.default_rng(seed + 1)
    returns, lengths = [], []
    for _ in range(episodes):
        env.reset()
        total, steps, done = 0.0, 0, False
        while not done:
            action = 0 if policy == "noop" else int(rng.integers(env.num_actions))
            _, reward, terminated, truncated = env.step(action)
            total, steps, done = total + reward, steps + 1, terminated or truncated
        returns.append(total)
        lengths.append(steps)
    return returns, float(np.mean(lengths))


def _mujoco_returns(env_spec: Any, policy: str, episodes: int, seed: int) -> tuple[list[float], float]:
    from rlrepro.environments.mujoco import episode_returns

    return episode_returns(env_spec, episodes, seed, policy)


def _atari_returns(env_spec: Any, policy: str, episodes: int, seed: int) -> tuple[list[float], float]:
    """First games of ``episodes`` emulators, built as the agents' evaluation builds them."""
    from rlrepro.environments.atari import AtariEnv

    env = AtariEnv(env_spec, num_envs=episodes, seed=seed, training=False, noop_max=env_spec.evaluation.noop_max,
                   num_threads=1)
    rng = np.random.default_rng(seed + 1)
    env.reset()
    finished, scores, steps = np.zeros(episodes, bool), np.zeros(episodes), np.zeros(episodes)
    try:
        while not finished.all():
            if policy == "noop":
                actions = np.zeros(episodes, np.int32)
            else:
                actions = rng.integers(env.num_actions, size=episodes).astype(np.int32)
            step = env.step(actions)
            steps[~finished] += 1
            newly = step.game_over & ~finished
            scores[newly] = step.episode_return[newly]
            finished |= step.game_over
    finally:
        env.close()
    return scores.tolist(), float(steps.mean())


MEASURERS: dict[str, Callable[..., tuple[list[float], float]]] = {
    "jax": _jax_returns,
    "gym": _gym_returns,
    "mujoco": _mujoco_returns,
    "atari": _atari_returns,
}


def backend_versions(kind: str) -> str:
    """The versions of the packages that produced a score (``;``-separated name=version)."""
    from importlib import metadata

    packages = {"jax": ("jax",), "gym": ("gymnasium", "minigrid"), "mujoco": ("gymnasium", "mujoco"),
                "atari": ("ale-py",)}[kind]
    found = []
    for package in packages:
        try:
            found.append(f"{package}={metadata.version(package)}")
        except metadata.PackageNotFoundError:
            found.append(f"{package}=missing")
    return ";".join(found)


def measure(env_spec: Any, policy: str, *, episodes: int, seed: int = 0, command: str, commit: str,
            date: str) -> tuple[TrivialScore, dict[str, Any]]:
    """Play ``episodes`` episodes of ``policy`` in ``env_spec``; the score and the extra CSV fields."""
    kind = env_spec.kind
    if kind not in MEASURERS:
        raise ValueError(f"{kind} environment {env_name(env_spec)!r} cannot be measured here")
    start = time.monotonic()
    returns, mean_steps = MEASURERS[kind](env_spec, policy, episodes, seed)
    mean, sd, low, high, method = summarize(returns)
    score = TrivialScore(policy=policy, mean=mean, sd=sd, episodes=len(returns), low=low, high=high,
                         protocol=protocol_json(env_spec, policy), command=command, commit=commit, date=date, interval=method,
                         scores=tuple(float(r) for r in returns))
    extra = {"mean_steps": f"{mean_steps:.1f}", "versions": backend_versions(kind),
             "seconds": f"{time.monotonic() - start:.1f}"}
    return score, extra


# --- the command ----------------------------------------------------------------------------------------------

# Measured first within each Atari protocol: the games the issues name (NOOP passes Tennis and Pitfall's bars;
# per-game bars within a few percent of random), then the rest alphabetically.
ATARI_FIRST: tuple[str, ...] = (
    "tennis", "pitfall", "venture", "seaquest", "beam_rider", "asteroids", "space_invaders", "gravitar", "bank_heist",
    "pong", "breakout", "skiing",
)


def spec_environments(paths: list[Any]) -> list[tuple[Any, str, Any]]:
    """(spec file, scale, environment) for every environment a spec runs at any scale, gym suites flattened.

    Paper scale runs every environment; smoke and cpu their ``environments`` (default: all), with the scale's
    ``env`` overrides applied (e.g. the cpu scale's 27,000-frame cap is another protocol).
    """
    from rlrepro.specs import SCALES, load_specs, resolve_env

    found = []
    for path, spec in load_specs(paths):
        for scale in SCALES:
            ids = [e.id for e in spec.environments]
            if scale != "paper" and spec.scales[scale].environments is not None:
                ids = list(spec.scales[scale].environments)
            for env_id in ids:
                env = resolve_env(spec, env_id, scale, source=str(path))
                members = env.environments if env.kind == "gym_suite" else [env]
                found.extend((path, scale, member) for member in members)
    return found


def _order(env_spec: Any) -> tuple:
    """Cheap and important first: non-Atari, then Atari by frame cap, minimal set first, named games first."""
    if env_spec.kind != "atari":
        return (0, env_spec.kind, env_name(env_spec))
    named = env_spec.game in ATARI_FIRST
    first = ATARI_FIRST.index(env_spec.game) if named else len(ATARI_FIRST)
    # Within a frame cap: the named games in both action sets, then the rest of the minimal set, then the full set.
    return (1, env_spec.max_episode_frames, not named, first if named else env_spec.action_set != "minimal",
            env_spec.game, env_spec.action_set)


def _matches(env_spec: Any, filters: list[str]) -> bool:
    if not filters:
        return True
    names = {env_spec.kind, env_name(env_spec), getattr(env_spec, "id", "")}
    return any(f in names for f in filters)


def plan_missing(paths: list[Any], filters: list[str], rows: list[dict[str, str]],
                 episodes: int | None = None) -> tuple[list[tuple[Any, str]], list[Any], int]:
    """(missing (env, policy) pairs in measuring order, unavailable envs without a row, protocols already measured).

    A stored row with fewer than ``episodes`` episodes (default ``MIN_EPISODES``, what a level needs) counts as
    missing: it is measured again, longer.
    """
    from rlrepro.results.trivial import policies_for, protocol_key, unavailable_reason

    need = episodes or MIN_EPISODES
    have = {(r["protocol_key"], r["policy"]) for r in rows if not r.get("episodes") or int(r["episodes"]) >= need}
    unique: dict[str, Any] = {}
    for _, _, env in spec_environments(paths):
        if _matches(env, filters):
            unique.setdefault(protocol_key(env), env)
    todo, unavailable, done, planned = [], [], 0, set()
    for key, env in sorted(unique.items(), key=lambda item: _order(item[1])):
        if unavailable_reason(env) is not None:
            if (key, "") not in have:
                unavailable.append(env)
            continue
        lacking = []
        for policy in policies_for(env):  # one row may serve several protocols (Atari NOOP: both action sets)
            row_key = (protocol_key(env, policy), policy)
            if row_key not in have and row_key not in planned:
                lacking.append((env, policy))
                planned.add(row_key)
        todo.extend(lacking)
        done += not lacking
    return todo, unavailable, done


def _merge(csv_path: Any, new_rows: list[dict[str, Any]]) -> None:
    """Add rows to the CSV under a file lock (several runs may write), replacing rows of the same key and policy
    unless the stored row has more episodes (a quick re-measurement never overwrites a longer one)."""
    import fcntl
    import hashlib
    import tempfile
    from pathlib import Path

    from rlrepro.results.trivial import read_rows, write_rows

    digest = hashlib.sha256(str(Path(csv_path).resolve()).encode()).hexdigest()[:16]
    lock_path = Path(tempfile.gettempdir()) / f"rlrepro-trivial-{digest}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = read_rows(csv_path)
        stored = {(r["protocol_key"], r["policy"]): r for r in rows}

        def episodes(row: Any) -> int:
            return int(row.get("episodes") or 0)

        kept = [r for r in new_rows if episodes(stored.get((r["protocol_key"], r["policy"]), {})) <= episodes(r)]
        replaced = {(r["protocol_key"], r["policy"]) for r in kept}
        rows = [r for r in rows if (r["protocol_key"], r["policy"]) not in replaced]
        write_rows(rows + kept, csv_path)


def run_trivial_scores(paths: list[Any], *, filters: list[str], episodes: int | None, csv_path: Any, command: str,
                       shard: tuple[int, int] = (0, 1), dry_run: bool = False, out: Callable[[str], None] = print) -> int:
    """Measure every missing or stale row for the environments of ``paths``; each row is written as it finishes."""
    from datetime import datetime, timezone

    from rlrepro.provenance import git_commit
    from rlrepro.results.trivial import protocol_key, score_row, unavailable_row

    todo, unavailable, done = plan_missing(paths, filters, _read(csv_path), episodes)
    index, count = shard
    keys = list(dict.fromkeys(protocol_key(env) for env, _ in todo))  # a protocol's policies stay in one shard
    mine = set(keys[index::count])
    todo = [(env, policy) for env, policy in todo if protocol_key(env) in mine]
    if not todo and not unavailable:
        out(f"nothing to measure: all {done} protocol(s) of the selected environments have their trivial scores "
            f"in {csv_path}")
        return 0
    commit = git_commit()
    stamp = lambda: datetime.now(timezone.utc).isoformat(timespec="seconds")  # noqa: E731
    if unavailable and not dry_run:
        _merge(csv_path, [unavailable_row(env, command, commit, stamp()) for env in unavailable])
        for env in unavailable:
            out(f"not measurable  {env.kind}:{env_name(env)}  (recorded with its reason)")
    out(f"{len(todo)} (protocol, policy) row(s) to measure" + (f" (shard {index + 1}/{count})" if count > 1 else ""))
    for number, (env, policy) in enumerate(todo, 1):
        if dry_run:
            out(f"would measure  {env.kind}:{env_name(env)} {policy}  {protocol_json_short(env)}")
            continue
        if any(r["protocol_key"] == protocol_key(env, policy) and r["policy"] == policy
               and int(r["episodes"] or 0) >= (episodes or MIN_EPISODES) for r in _read(csv_path)):
            out(f"[{number}/{len(todo)}] {env.kind}:{env_name(env)} {policy}: measured meanwhile by another run")
            continue
        n = episodes or DEFAULT_EPISODES[env.kind][policy]
        score, extra = measure(env, policy, episodes=n, command=command, commit=commit, date=stamp())
        _merge(csv_path, [score_row(env, score, **extra)])
        out(f"[{number}/{len(todo)}] {env.kind}:{env_name(env)} {policy}: {score.mean:.3f} "
            f"[{score.low:.3f}, {score.high:.3f}] over {score.episodes} episodes, {extra['mean_steps']} steps, "
            f"{extra['seconds']} s")
    return 0


def protocol_json_short(env_spec: Any) -> str:
    return protocol_json(env_spec)


def _read(csv_path: Any) -> list[dict[str, str]]:
    from rlrepro.results.trivial import read_rows

    return read_rows(csv_path)
